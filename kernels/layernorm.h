// --- layernorm.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// y = (x - mean) rstd gamma + beta per row of x [rows, C]; writes mean, rstd [rows].
void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                       float* rstd, int64_t rows, int64_t C);
// y = LayerNorm(x + res) per row, without statistics (the recurrent step).
void residual_layernorm_forward(const float* x, const float* res, const float* gamma, const float* beta, float* y,
                                int64_t rows, int64_t C);
// dx overwritten; dgamma, dbeta [C] accumulated (+=).
void layernorm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                        const float* dy, float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t C);
}  // namespace lt::kernels
