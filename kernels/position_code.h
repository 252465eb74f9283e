// --- position_code.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// pe [L, D] = the sinusoidal code of positions offset .. offset+L-1 (D even).
void position_code(int64_t offset, float* pe, int64_t L, int64_t D);
// y [N, L, C+D] = concat(x [N, L, C], pe [L, D] for every n) on the last axis.
void concat_position_forward(const float* x, const float* pe, float* y, int64_t N, int64_t L, int64_t C,
                             int64_t D);
// dx [rows, C] = the first C of the W channels of each row of dy [rows, W].
void concat_position_backward(const float* dy, float* dx, int64_t rows, int64_t C, int64_t W);
}  // namespace lt::kernels
