#pragma once
#include <cstdint>

namespace lt::cuda {
// S[n,h] = sum_l fk[n,l,h,:] v[n,l,h,:]^T, Z[n,h] = sum_l fk[n,l,h,:] (overwrites).
void linear_attention_state(const float* fk, const float* v, float* S, float* Z, int64_t N, int64_t L,
                            int64_t H, int64_t F, int64_t M);
// The same with S stored as bfloat16 bits, rounded once from float32 sums.
void linear_attention_state_bf16(const float* fk, const float* v, uint16_t* S, float* Z, int64_t N, int64_t L,
                                 int64_t H, int64_t F, int64_t M);
}  // namespace lt::cuda
