// --- activations.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// y = f(x) and dx = f'(x) dy over n elements (see ops/ops.h for each f).
void relu_forward(const float* x, float* y, int64_t n);
void relu_backward(const float* x, const float* dy, float* dx, int64_t n);
void gelu_forward(const float* x, float* y, int64_t n);
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);
void elu_plus_one_forward(const float* x, float* y, int64_t n);
void elu_plus_one_backward(const float* x, const float* dy, float* dx, int64_t n);
}  // namespace lt::kernels
