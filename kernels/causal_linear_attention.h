// --- causal_linear_attention.cu ---
#pragma once
#include <cstdint>

namespace lt::cuda {
// out [N, L, H, M] = causal linear attention (eq. 9-12) of feature-mapped
// fq, fk [N, L, H, F] and values v [N, L, H, M]; memory O(N L H M).
void causal_linear_attention_forward(const float* fq, const float* fk, const float* v, float* out, int64_t N,
                                     int64_t L, int64_t H, int64_t F, int64_t M);
// dfq, dfk, dv (overwritten) from dout, recomputing the forward (eq. 13-15).
void causal_linear_attention_backward(const float* fq, const float* fk, const float* v, const float* dout,
                                      float* dfq, float* dfk, float* dv, int64_t N, int64_t L, int64_t H,
                                      int64_t F, int64_t M);
}  // namespace lt::cuda
