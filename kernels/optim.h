// --- optim.cu --- optimizer update and gradient clipping (optim/optimizer.h).
#pragma once
#include <cstdint>

namespace lt::kernels {
// The fused Adam-family pass of lib/optim/moment_update.h over n values.
void moment_update(float* params, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                   float beta1, float one_minus_beta1, float beta2, float one_minus_beta2, float eps,
                   float l2, float decay, float step, float v_scale, bool use_denominator);
// Clips grad[offsets[s], offsets[s+1]) for each of the segments on its own
// (offsets on the host, segments + 1 of them); norms[s] (host) gets each norm.
void clip_grad_norm_segments(float* grad, const int64_t* offsets, int64_t segments, float max_norm,
                             double* norms);
}  // namespace lt::kernels
