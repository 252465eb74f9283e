// --- softmax.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// y = softmax of each row of x [rows, C].
void softmax_forward(const float* x, float* y, int64_t rows, int64_t C);
// dx = y (dy - <dy, y>) per row.
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t C);
}  // namespace lt::kernels
