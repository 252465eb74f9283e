// Optimizer kernels: the fused Adam-family update (one grid-stride pass,
// IEEE-rounded sqrt and division despite --use_fast_math so that the GPU
// follows the CPU's float arithmetic), and per-segment gradient clipping as
// two kernels on a (blocks, segment) grid: squared norms accumulated in double
// with one atomic per block, then a scale that reads its segment's norm on the
// device. The norms come back to the host in one copy.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_check.cuh"
#include "kernels.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 1024;
constexpr int64_t kMaxGridY = 65535;

__global__ void moment_update_kernel(float* p, const float* g, float* m, float* v, long long n,
                                     float beta1, float one_minus_beta1, float beta2,
                                     float one_minus_beta2, float eps, float l2, float decay,
                                     float step, float v_scale, bool use_denominator) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const float gi = g[i] + l2 * p[i];
    const float mi = beta1 * m[i] + one_minus_beta1 * gi;
    const float vi = beta2 * v[i] + one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float direction = use_denominator ? __fdiv_rn(mi, __fsqrt_rn(vi) * v_scale + eps) : mi;
    p[i] = decay * p[i] - step * direction;
  }
}

// Blocks past their segment's end leave at once (the whole block together).
__global__ void segment_sum_squares_kernel(const float* g, const int64_t* offsets, int64_t seg_base,
                                           double* sums) {
  const int64_t seg = seg_base + blockIdx.y, end = offsets[seg + 1];
  const int64_t first = offsets[seg] + blockIdx.x * (int64_t)blockDim.x;
  if (first >= end) return;
  double s = 0;
  for (int64_t i = first + threadIdx.x; i < end; i += (int64_t)gridDim.x * blockDim.x)
    s += double(g[i]) * g[i];
  s = block_sum(s);
  if (threadIdx.x == 0) atomicAdd(&sums[seg], s);
}

__global__ void segment_scale_kernel(float* g, const int64_t* offsets, int64_t seg_base,
                                     const double* sums, float max_norm) {
  const int64_t seg = seg_base + blockIdx.y, end = offsets[seg + 1];
  const double factor = max_norm / (sqrt(sums[seg]) + 1e-6);  // clip_grad_norm_'s rule
  if (factor >= 1) return;
  const float f = float(factor);
  for (int64_t i = offsets[seg] + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < end;
       i += (int64_t)gridDim.x * blockDim.x)
    g[i] *= f;
}

}  // namespace

void moment_update(float* params, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                   float beta1, float one_minus_beta1, float beta2, float one_minus_beta2, float eps,
                   float l2, float decay, float step, float v_scale, bool use_denominator) {
  if (n == 0) return;
  unsigned blocks = blocks_for(n, kThreads);
  if (blocks > 8 * kMaxBlocks) blocks = 8 * kMaxBlocks;
  moment_update_kernel<<<blocks, kThreads, 0, stream()>>>(params, grad, exp_avg, exp_avg_sq, n, beta1,
                                             one_minus_beta1, beta2, one_minus_beta2, eps, l2, decay,
                                             step, v_scale, use_denominator);
  LT_CUDA_LAUNCH_CHECK();
}

void clip_grad_norm_segments(float* grad, const int64_t* offsets, int64_t segments, float max_norm,
                             double* norms) {
  if (segments == 0) return;
  // Scratch: sums [segments] doubles, then offsets [segments + 1].
  float* raw = scratch(size_t(2 * (2 * segments + 1)));
  double* sums = reinterpret_cast<double*>(raw);
  int64_t* dev_offsets = reinterpret_cast<int64_t*>(sums + segments);
  LT_CUDA_CHECK(cudaMemsetAsync(sums, 0, segments * sizeof(double), stream()));
  memcpy_h2d(dev_offsets, offsets, (segments + 1) * sizeof(int64_t));

  int64_t longest = 0;
  for (int64_t s = 0; s < segments; ++s) longest = std::max(longest, offsets[s + 1] - offsets[s]);
  unsigned bx = blocks_for(longest, kThreads * 4);
  bx = bx < 1 ? 1 : (bx > kMaxBlocks ? kMaxBlocks : bx);
  for (int64_t base = 0; base < segments; base += kMaxGridY) {
    dim3 grid(bx, unsigned(std::min(kMaxGridY, segments - base)));
    segment_sum_squares_kernel<<<grid, kThreads, 0, stream()>>>(grad, dev_offsets, base, sums);
    LT_CUDA_LAUNCH_CHECK();
  }
  for (int64_t base = 0; base < segments; base += kMaxGridY) {
    dim3 grid(bx, unsigned(std::min(kMaxGridY, segments - base)));
    segment_scale_kernel<<<grid, kThreads, 0, stream()>>>(grad, dev_offsets, base, sums, max_norm);
    LT_CUDA_LAUNCH_CHECK();
  }
  std::vector<double> host(segments);
  memcpy_d2h(host.data(), sums, segments * sizeof(double));
  for (int64_t s = 0; s < segments; ++s) norms[s] = std::sqrt(host[s]);
}

}  // namespace lt::kernels
