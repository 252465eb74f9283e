// --- linear_attention_step.cu ---
#pragma once
#include <cstdint>

#include "common/constants.h"

namespace lt::kernels {
// One recurrent step (eq. 16-20) for N x H heads, fq, fk [N, H, F], v [N, H,
// M]: S [R, H, F, M] += fk v^T, Z [R, H, F] += fk, out [N, H, M] = fq^T S /
// (fq . Z + eps). Element n steps state row rows[n] (device memory: a
// pool's rows, distinct and inside the state; -1 pads a batch-size bucket,
// touching no state and giving zeros), or row n when rows is null.
void linear_attention_step(const float* fq, const float* fk, const float* v, float* S, float* Z, float* out,
                           int64_t N, int64_t H, int64_t F, int64_t M, const int64_t* rows);
// The same with S stored as bfloat16 bits (rounded to nearest even when stored).
void linear_attention_step_bf16(const float* fq, const float* fk, const float* v, uint16_t* S, float* Z,
                                float* out, int64_t N, int64_t H, int64_t F, int64_t M, const int64_t* rows);
// The same from the rows qkv [N, 3, H, E] of one product, the elementwise phi
// (elu_plus_one or relu; not none) applied to q and k as they are read (F = M = E).
void linear_attention_step_packed(const float* qkv, Elementwise phi, float* S, float* Z, float* out, int64_t N,
                                  int64_t H, int64_t E, const int64_t* rows);
void linear_attention_step_packed_bf16(const float* qkv, Elementwise phi, uint16_t* S, float* Z, float* out,
                                       int64_t N, int64_t H, int64_t E, const int64_t* rows);
}  // namespace lt::kernels
