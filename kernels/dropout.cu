// Dropout's stateless mask on the GPU: the same SplitMix64 arithmetic as
// lib/ops/dropout.cpp (integer only, so the two agree exactly), one thread per
// element in a grid-stride loop. key, threshold and scale come from the host.
#include <algorithm>

#include "cuda_check.cuh"
#include "dropout.h"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
unsigned grid_for(int64_t n) { return std::min<unsigned>(blocks_for(n, kThreads), 1u << 16); }
constexpr unsigned long long kGolden = 0x9E3779B97F4A7C15ull;

__device__ unsigned long long mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr unsigned long long kRowOdd = 0xD1B54A32D192ED03ull;

__global__ void dropout_kernel(const float* x, float* y, long long n, unsigned long long key, unsigned threshold,
                               float scale, long long first, long long rows, long long inner) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long segment = i / inner, r = segment % rows, o = segment / rows;
    const unsigned long long row_key = mix64(key + (unsigned long long)(first + r + 1) * kRowOdd);
    const unsigned long long pos = (unsigned long long)(o * inner + (i - segment * inner));
    const unsigned u = (unsigned)(mix64(row_key + (pos + 1) * kGolden) >> 40);
    y[i] = u >= threshold ? x[i] * scale : 0.f;
  }
}

}  // namespace

void dropout_apply(const float* x, float* y, int64_t n, uint64_t key, uint32_t threshold, float scale, int64_t first,
                   int64_t rows, int64_t inner) {
  if (n == 0) return;
  dropout_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, y, n, key, threshold, scale, first, rows, inner);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
