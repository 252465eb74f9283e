// Position code and its concatenation on the GPU. The code is computed in
// double like the CPU version (double sin/cos are not affected by
// --use_fast_math), so both round the same angle to float. The concatenation
// and its backward are plain copies, one thread per output element.
#include <algorithm>
#include <cmath>

#include "cuda_check.cuh"
#include "position_code.h"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
unsigned grid_for(int64_t n) { return std::min<unsigned>(blocks_for(n, kThreads), 1u << 16); }

// One thread per (position, pair): writes pe[l, 2i] and pe[l, 2i+1].
__global__ void position_code_kernel(long long offset, float* pe, long long L, long long D, double log_base) {
  const long long half = D / 2;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < L * half; e += (long long)gridDim.x * blockDim.x) {
    const long long l = e / half, i = e % half;
    const double angle = (double)(offset + l) * exp((double)(2 * i) * log_base);
    pe[l * D + 2 * i] = (float)sin(angle);
    pe[l * D + 2 * i + 1] = (float)cos(angle);
  }
}

__global__ void concat_kernel(const float* x, const float* pe, float* y, long long rows, long long L, long long C,
                              long long D) {
  const long long W = C + D;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < rows * W; e += (long long)gridDim.x * blockDim.x) {
    const long long r = e / W, j = e % W;
    y[e] = j < C ? x[r * C + j] : pe[(r % L) * D + (j - C)];
  }
}

__global__ void first_channels_kernel(const float* dy, float* dx, long long rows, long long C, long long W) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < rows * C; e += (long long)gridDim.x * blockDim.x)
    dx[e] = dy[(e / C) * W + e % C];
}

}  // namespace

void position_code(int64_t offset, float* pe, int64_t L, int64_t D) {
  if (L * D == 0) return;
  const double log_base = -std::log(10000.0) / (double)D;
  position_code_kernel<<<grid_for(L * D / 2), kThreads, 0, stream()>>>(offset, pe, L, D, log_base);
  LT_CUDA_LAUNCH_CHECK();
}

void concat_position_forward(const float* x, const float* pe, float* y, int64_t N, int64_t L, int64_t C,
                             int64_t D) {
  if (N * L * (C + D) == 0) return;
  concat_kernel<<<grid_for(N * L * (C + D)), kThreads, 0, stream()>>>(x, pe, y, N * L, L, C, D);
  LT_CUDA_LAUNCH_CHECK();
}

void concat_position_backward(const float* dy, float* dx, int64_t rows, int64_t C, int64_t W) {
  if (rows * C == 0) return;
  first_channels_kernel<<<grid_for(rows * C), kThreads, 0, stream()>>>(dy, dx, rows, C, W);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
