// --- linear_attention_step.cu ---
#pragma once
#include <cstdint>

#include "common/constants.h"

namespace lt::kernels {
// One recurrent step (eq. 16-20) for `pairs` = N * H heads: S [pairs, F, M] +=
// fk v^T, Z [pairs, F] += fk, out [pairs, M] = fq^T S / (fq . Z + eps).
void linear_attention_step(const float* fq, const float* fk, const float* v, float* S, float* Z, float* out,
                           int64_t pairs, int64_t F, int64_t M);
// The same with S stored as bfloat16 bits (rounded to nearest even when stored).
void linear_attention_step_bf16(const float* fq, const float* fk, const float* v, uint16_t* S, float* Z,
                                float* out, int64_t pairs, int64_t F, int64_t M);
// The same from the rows qkv [N, 3, H, E] of one product, the elementwise phi
// (elu_plus_one or relu; not none) applied to q and k as they are read (F = M = E).
void linear_attention_step_packed(const float* qkv, Elementwise phi, float* S, float* Z, float* out, int64_t N,
                                  int64_t H, int64_t E);
void linear_attention_step_packed_bf16(const float* qkv, Elementwise phi, uint16_t* S, float* Z, float* out,
                                       int64_t N, int64_t H, int64_t E);
}  // namespace lt::kernels
