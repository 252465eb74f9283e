// Elementwise sum and accumulation: grid-stride loops, so any n fits a grid
// of bounded size. y may alias a or b: each element is read before written by
// the same thread. Column copies are one strided cudaMemcpy2D. Swapping two
// leading axes writes dst in order (coalesced), reading src by blocks of C.
#include <algorithm>

#include "cuda_check.cuh"
#include "elementwise.h"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
unsigned grid_for(int64_t n) { return std::min<unsigned>(blocks_for(n, kThreads), 1u << 16); }

__global__ void add_kernel(const float* a, const float* b, float* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = a[i] + b[i];
}

__global__ void accumulate_kernel(float* dst, const float* src, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dst[i] += src[i];
}

// dst element e = (b * n0 + a) * C + c comes from src (a * n1 + b) * C + c.
__global__ void swap_kernel(const float* src, long long n0, long long n1, long long C, float* dst) {
  const long long n = n0 * n1 * C;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    const long long c = e % C, ba = e / C, a = ba % n0, b = ba / n0;
    dst[e] = src[(a * n1 + b) * C + c];
  }
}

}  // namespace

void add(const float* a, const float* b, float* y, int64_t n) {
  if (n == 0) return;
  add_kernel<<<grid_for(n), kThreads, 0, stream()>>>(a, b, y, n);
  LT_CUDA_LAUNCH_CHECK();
}

void accumulate(float* dst, const float* src, int64_t n) {
  if (n == 0) return;
  accumulate_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dst, src, n);
  LT_CUDA_LAUNCH_CHECK();
}

void copy_columns(const float* src, int64_t src_cols, int64_t first, float* dst, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return;
  LT_CUDA_CHECK(cudaMemcpy2DAsync(dst, cols * sizeof(float), src + first, src_cols * sizeof(float),
                                  cols * sizeof(float), rows, cudaMemcpyDeviceToDevice, stream()));
}

void swap_leading_axes(const float* src, int64_t n0, int64_t n1, int64_t C, float* dst) {
  const int64_t n = n0 * n1 * C;
  if (n == 0) return;
  swap_kernel<<<grid_for(n), kThreads, 0, stream()>>>(src, n0, n1, C, dst);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
