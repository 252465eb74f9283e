// --- favor.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// FAVOR+ features of x [rows, E] (see lib/attention/favor_feature_map.cpp):
// y [rows, 2P] = [exp(u - o), exp(-u - o)], u = omega^T (scale x), omega [E, P],
// o = |scale x|^2 / 2 + log_norm.
void favor_forward(const float* x, const float* omega, float* y, int64_t rows, int64_t E, int64_t P, float scale,
                   float log_norm);
// dx [rows, E] = (dphi/dx)^T dy for dy [rows, 2P], phi recomputed from x (overwrites dx).
void favor_backward(const float* x, const float* omega, const float* dy, float* dx, int64_t rows, int64_t E,
                    int64_t P, float scale, float log_norm);
}  // namespace lt::kernels
