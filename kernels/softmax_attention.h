// --- softmax_attention.cu: eq. 2, temperature 1/sqrt(E) ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// probs [N,H,L,S] = softmax(q k^T / sqrt(E)) per head (causal: keys s > l get
// probability 0; needs L == S), out [N,L,H,M] = probs v. key_lengths: a DEVICE
// array of N lengths (clamped to [0, S]) or nullptr; keys s >= len get
// probability 0 and, when L == S, rows l >= len are all zero.
void softmax_attention_forward(const float* q, const float* k, const float* v, const int32_t* key_lengths,
                               float* probs, float* out, int64_t N, int64_t L, int64_t S, int64_t H, int64_t E,
                               int64_t M, bool causal);
// dq, dk, dv (overwritten) from the saved probs and dout [N,L,H,M]; the masks
// are in probs (zero rows and columns give zero gradients).
void softmax_attention_backward(const float* q, const float* k, const float* v, const float* probs,
                                const float* dout, float* dq, float* dk, float* dv, int64_t N, int64_t L,
                                int64_t S, int64_t H, int64_t E, int64_t M);
// KV-cache step: k, v [N,H,E|M] into row t of k_cache [N,T,H,E] and v_cache
// [N,T,H,M], then out [N,H,M] = attention of q [N,H,E] over rows 0..t.
void softmax_attention_step(const float* q, const float* k, const float* v, float* k_cache, float* v_cache,
                            float* out, int64_t N, int64_t T, int64_t H, int64_t E, int64_t M, int64_t t);
}  // namespace lt::kernels
