// FAVOR+ random features on the GPU, one warp per row of x [rows, E]. The
// lanes share |x~|^2 by shuffle, then lane l owns projections l, l + 32, ...:
// u_j = w_j . x~ reads the row of omega [E, P] coalesced and x~_e as one
// broadcast. The backward recomputes u, keeps g+ - g- of the row in shared
// memory (P floats per warp), and lane l then owns dx_e for e = l, l + 32, ...
// The formulas and their derivation are in lib/attention/favor_feature_map.cpp;
// expf is the fast intrinsic under --use_fast_math (relative error ~1e-6 for
// the exponents here, which are at most |w_j|^2 / 2).
#include <algorithm>
#include <string>

#include "cuda_check.cuh"
#include "favor.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kWarps = 4;
constexpr size_t kSharedBytes = 48 * 1024;  // without opting in to more

// The exponent's offset |x~|^2 / 2 + log_norm of one row, on every lane.
__device__ float row_offset(const float* xr, int E, float scale, float log_norm) {
  float sq = 0.f;
  for (int e = threadIdx.x; e < E; e += 32) {
    const float v = scale * xr[e];
    sq += v * v;
  }
  return 0.5f * warp_sum(sq) + log_norm;
}

__device__ float projection(const float* xr, const float* omega, int E, int P, int j, float scale) {
  float u = 0.f;
  for (int e = 0; e < E; ++e) u += xr[e] * omega[(long long)e * P + j];
  return scale * u;
}

__global__ void favor_forward_kernel(const float* __restrict__ x, const float* __restrict__ omega,
                                     float* __restrict__ y, long long rows, int E, int P, float scale,
                                     float log_norm) {
  const long long r = blockIdx.x * (long long)blockDim.y + threadIdx.y;
  if (r >= rows) return;  // a whole warp leaves together
  const float* xr = x + r * E;
  float* yr = y + r * 2LL * P;
  const float offset = row_offset(xr, E, scale, log_norm);
  for (int j = threadIdx.x; j < P; j += 32) {
    const float u = projection(xr, omega, E, P, j, scale);
    yr[j] = expf(u - offset);
    yr[P + j] = expf(-u - offset);
  }
}

__global__ void favor_backward_kernel(const float* __restrict__ x, const float* __restrict__ omega,
                                      const float* __restrict__ dy, float* __restrict__ dx, long long rows, int E,
                                      int P, float scale, float log_norm) {
  extern __shared__ float shared[];
  const long long r = blockIdx.x * (long long)blockDim.y + threadIdx.y;
  if (r >= rows) return;
  float* diff = shared + threadIdx.y * P;  // g+ - g- of this warp's row
  const float* xr = x + r * E;
  const float* gr = dy + r * 2LL * P;
  const float offset = row_offset(xr, E, scale, log_norm);
  float total = 0.f;
  for (int j = threadIdx.x; j < P; j += 32) {
    const float u = projection(xr, omega, E, P, j, scale);
    const float plus = gr[j] * expf(u - offset), minus = gr[P + j] * expf(-u - offset);
    diff[j] = plus - minus;
    total += plus + minus;
  }
  total = warp_sum(total);
  __syncwarp();
  for (int e = threadIdx.x; e < E; e += 32) {
    const float* w = omega + (long long)e * P;
    float a = 0.f;
    for (int j = 0; j < P; ++j) a += w[j] * diff[j];
    dx[r * E + e] = scale * (a - scale * xr[e] * total);
  }
}

unsigned grid_for_rows(int64_t rows, int warps) {
  const int64_t blocks = (rows + warps - 1) / warps;
  if (blocks > 0x7fffffffLL)
    throw lt::Error("feature map favor: " + std::to_string(rows) + " rows exceed the CUDA grid");
  return unsigned(blocks);
}

}  // namespace

void favor_forward(const float* x, const float* omega, float* y, int64_t rows, int64_t E, int64_t P, float scale,
                   float log_norm) {
  if (rows == 0) return;
  favor_forward_kernel<<<grid_for_rows(rows, kWarps), dim3(32, kWarps), 0, stream()>>>(x, omega, y, rows, (int)E, (int)P, scale,
                                                                          log_norm);
  LT_CUDA_LAUNCH_CHECK();
}

void favor_backward(const float* x, const float* omega, const float* dy, float* dx, int64_t rows, int64_t E,
                    int64_t P, float scale, float log_norm) {
  if (rows == 0) return;
  const size_t per_warp = size_t(P) * sizeof(float);
  if (per_warp > kSharedBytes)
    throw lt::Error("feature map favor: " + std::to_string(2 * P) + " features exceed the CUDA backward's limit of " +
                    std::to_string(2 * (kSharedBytes / sizeof(float))));
  const int warps = int(std::min<size_t>(kWarps, kSharedBytes / per_warp));
  favor_backward_kernel<<<grid_for_rows(rows, warps), dim3(32, warps), warps * per_warp, stream()>>>(
      x, omega, dy, dx, rows, (int)E, (int)P, scale, log_norm);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
