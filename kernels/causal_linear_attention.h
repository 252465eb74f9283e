// --- causal_linear_attention.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// lengths: a DEVICE array of N int32 lengths (clamped to [0, L] as read), or
// nullptr for all L positions; positions t >= lengths[n] are padding: they
// change no state and their outputs and gradients are written as zeros.
// out [N, L, H, M] = causal linear attention (eq. 9-12) of feature-mapped
// fq, fk [N, L, H, F] and values v [N, L, H, M]; memory O(N L H M). tf32:
// where F <= 64 and M <= 63 (M + 1 with the normaliser's column), in chunks
// on the tensor cores (TF32 operands, fp32 sums); otherwise, and without it,
// an fp32 RNN over positions.
void causal_linear_attention_forward(const float* fq, const float* fk, const float* v, const int32_t* lengths,
                                     float* out, int64_t N, int64_t L, int64_t H, int64_t F, int64_t M, bool tf32);
// dfq, dfk, dv (overwritten) from dout, recomputing the forward (eq. 13-15).
void causal_linear_attention_backward(const float* fq, const float* fk, const float* v, const int32_t* lengths,
                                      const float* dout, float* dfq, float* dfk, float* dv, int64_t N, int64_t L,
                                      int64_t H, int64_t F, int64_t M, bool tf32);
// The forward from the state S [N, H, F, M], Z [N, H, F] over a chunk of L
// positions; S and Z are overwritten with the state after the real positions.
void causal_linear_attention_continue(const float* fq, const float* fk, const float* v, const int32_t* lengths,
                                      float* S, float* Z, float* out, int64_t N, int64_t L, int64_t H, int64_t F,
                                      int64_t M);
// The same with S stored as bfloat16 bits: widened once, rounded once when stored.
void causal_linear_attention_continue_bf16(const float* fq, const float* fk, const float* v,
                                           const int32_t* lengths, uint16_t* S, float* Z, float* out, int64_t N,
                                           int64_t L, int64_t H, int64_t F, int64_t M);
}  // namespace lt::kernels
