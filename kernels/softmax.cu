// Softmax over rows on the GPU: one warp per row (grid-stride over rows),
// lanes striding over C, shuffle reductions for the max, the sum and the
// backward's dot product. The row is common/softmax_row.h's, the CPU's too.
#include <algorithm>
#include <cmath>

#include "common/softmax_row.h"
#include "cuda_check.cuh"
#include "reductions.cuh"
#include "softmax.h"

namespace lt::kernels {
namespace {

constexpr int kWarpsPerBlock = 8;

unsigned row_blocks(int64_t rows) { return std::min<unsigned>(blocks_for(rows, kWarpsPerBlock), 1u << 20); }

// Every lane of a warp runs the same rows, so the full-mask shuffles are safe.
__global__ void softmax_forward_kernel(const float* x, float* y, long long rows, int C) {
  const int lane = threadIdx.x % 32;
  const long long stride = (long long)gridDim.x * kWarpsPerBlock;
  for (long long r = blockIdx.x * (long long)kWarpsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    float* yr = y + r * C;
    const float inv = 1.f / softmax_exp_row(x + r * C, yr, C, WarpLanes{lane});
    for (int c = lane; c < C; c += 32) yr[c] *= inv;
  }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, long long rows, int C) {
  const int lane = threadIdx.x % 32;
  const long long stride = (long long)gridDim.x * kWarpsPerBlock;
  for (long long r = blockIdx.x * (long long)kWarpsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    softmax_backward_row(y + r * C, dy + r * C, dx + r * C, C, WarpLanes{lane});
  }
}

}  // namespace

void softmax_forward(const float* x, float* y, int64_t rows, int64_t C) {
  if (rows == 0) return;
  softmax_forward_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream()>>>(x, y, rows, (int)C);
  LT_CUDA_LAUNCH_CHECK();
}

void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t C) {
  if (rows == 0) return;
  softmax_backward_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream()>>>(y, dy, dx, rows, (int)C);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
