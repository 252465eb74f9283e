// --- linear_attention.cu: non-causal linear attention, eq. 4-6 ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// key_lengths is a HOST array of N lengths in [0, S] (the caller validated
// them; they size the products), or nullptr for all S keys.
// out [N,L,H,M] = phi(q)^T A / (phi(q) . z + eps), A and z summed over the keys
// that count; fq [N,L,H,F], fk [N,S,H,F], v [N,S,H,M].
void linear_attention_forward(const float* fq, const float* fk, const float* v, const int32_t* key_lengths,
                              float* out, int64_t N, int64_t L, int64_t S, int64_t H, int64_t F, int64_t M);
// dfq, dfk, dv overwritten (zero for padded keys); A and z are recomputed.
void linear_attention_backward(const float* fq, const float* fk, const float* v, const int32_t* key_lengths,
                               const float* dout, float* dfq, float* dfk, float* dv, int64_t N, int64_t L,
                               int64_t S, int64_t H, int64_t F, int64_t M);
}  // namespace lt::kernels
