// LayerNorm on the GPU. One warp per row (grid-stride over rows, so any row
// count fits the grid), lanes meeting in shuffle reductions: no shared
// memory. dgamma and dbeta are column sums over all rows: a separate kernel
// where each block sums a tile of 32 columns over a slice of rows and adds it
// in with atomicAdd.
#include <algorithm>

#include "common/constants.h"
#include "cuda_check.cuh"
#include "layernorm.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kWarpsPerBlock = 8;

unsigned row_blocks(int64_t rows) { return std::min<unsigned>(blocks_for(rows, kWarpsPerBlock), 1u << 20); }

// Every lane of a warp runs the same rows, so the full-mask shuffles are safe.
// LayerNorm of x + res when res is given (the step's residual add), and the
// row statistics only when mean is given. K > 0: a row of C <= 32 K columns
// is held in registers, K per lane, every load issued before the first sum
// (a loop over C kept one load per warp in flight and read x three times:
// 37% of the H100's bandwidth); K = 0: any C, lanes striding over the row.
template <int K>
__global__ void layernorm_forward_kernel(const float* x, const float* res, const float* gamma, const float* beta,
                                         float* y, float* mean, float* rstd, long long rows, int C, float eps) {
  const int lane = threadIdx.x % 32;
  const long long stride = (long long)gridDim.x * kWarpsPerBlock;
  for (long long r = blockIdx.x * (long long)kWarpsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    const float* xr = x + r * C;
    const float* rr = res ? res + r * C : nullptr;
    auto at = [&](int c) { return rr ? xr[c] + rr[c] : xr[c]; };
    float* yr = y + r * C;
    float m, rs;
    if constexpr (K > 0) {
      float v[K];
#pragma unroll
      for (int i = 0; i < K; ++i) v[i] = lane + 32 * i < C ? at(lane + 32 * i) : 0.f;
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < K; ++i) s += v[i];
      m = warp_sum(s) / C;
      float q = 0.f;  // two passes, as on the CPU
#pragma unroll
      for (int i = 0; i < K; ++i) q += lane + 32 * i < C ? (v[i] - m) * (v[i] - m) : 0.f;
      rs = rsqrtf(warp_sum(q) / C + eps);
#pragma unroll
      for (int i = 0; i < K; ++i) {
        const int c = lane + 32 * i;
        if (c < C) yr[c] = (v[i] - m) * rs * gamma[c] + beta[c];
      }
    } else {
      float s = 0.f;
      for (int c = lane; c < C; c += 32) s += at(c);
      m = warp_sum(s) / C;
      float q = 0.f;
      for (int c = lane; c < C; c += 32) q += (at(c) - m) * (at(c) - m);
      rs = rsqrtf(warp_sum(q) / C + eps);
      for (int c = lane; c < C; c += 32) yr[c] = (at(c) - m) * rs * gamma[c] + beta[c];
    }
    if (lane == 0 && mean) {
      mean[r] = m;
      rstd[r] = rs;
    }
  }
}

// The smallest register row that holds C columns, or the loop beyond 1024.
void launch_layernorm_forward(const float* x, const float* res, const float* gamma, const float* beta, float* y,
                              float* mean, float* rstd, int64_t rows, int64_t C) {
  const unsigned blocks = row_blocks(rows), threads = kWarpsPerBlock * 32;
  const int c = (int)C;
  if (C <= 32)
    layernorm_forward_kernel<1><<<blocks, threads, 0, stream()>>>(x, res, gamma, beta, y, mean, rstd, rows, c, kLayerNormEps);
  else if (C <= 64)
    layernorm_forward_kernel<2><<<blocks, threads, 0, stream()>>>(x, res, gamma, beta, y, mean, rstd, rows, c, kLayerNormEps);
  else if (C <= 128)
    layernorm_forward_kernel<4><<<blocks, threads, 0, stream()>>>(x, res, gamma, beta, y, mean, rstd, rows, c, kLayerNormEps);
  else if (C <= 256)
    layernorm_forward_kernel<8><<<blocks, threads, 0, stream()>>>(x, res, gamma, beta, y, mean, rstd, rows, c, kLayerNormEps);
  else if (C <= 512)
    layernorm_forward_kernel<16><<<blocks, threads, 0, stream()>>>(x, res, gamma, beta, y, mean, rstd, rows, c, kLayerNormEps);
  else if (C <= 1024)
    layernorm_forward_kernel<32><<<blocks, threads, 0, stream()>>>(x, res, gamma, beta, y, mean, rstd, rows, c, kLayerNormEps);
  else
    layernorm_forward_kernel<0><<<blocks, threads, 0, stream()>>>(x, res, gamma, beta, y, mean, rstd, rows, c, kLayerNormEps);
  LT_CUDA_LAUNCH_CHECK();
}

// dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy gamma, per row. A
// warp reads its whole row before writing it, so dx may alias dy.
__global__ void layernorm_dx_kernel(const float* x, const float* gamma, const float* mean, const float* rstd,
                                    const float* dy, float* dx, long long rows, int C) {
  const int lane = threadIdx.x % 32;
  const long long stride = (long long)gridDim.x * kWarpsPerBlock;
  for (long long r = blockIdx.x * (long long)kWarpsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    const float m = mean[r], rs = rstd[r];
    float sg = 0.f, sgx = 0.f;
    for (int c = lane; c < C; c += 32) {
      const float gc = dyr[c] * gamma[c];
      sg += gc;
      sgx += gc * (xr[c] - m) * rs;
    }
    const float mean_g = warp_sum(sg) / C, mean_gx = warp_sum(sgx) / C;
    float* dxr = dx + r * C;
    for (int c = lane; c < C; c += 32) {
      const float xhat = (xr[c] - m) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - mean_g - xhat * mean_gx);
    }
  }
}

// Block (32, 8): threadIdx.x picks a column of the block's 32-column tile,
// threadIdx.y strides over this block's rows; the 8 partial sums meet in
// shared memory and one atomicAdd per column adds them to dgamma, dbeta.
__global__ void layernorm_param_grad_kernel(const float* x, const float* mean, const float* rstd, const float* dy,
                                            float* dgamma, float* dbeta, long long rows, int C) {
  __shared__ float part_g[8][33];
  __shared__ float part_b[8][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  float sg = 0.f, sb = 0.f;
  if (col < C)
    for (long long r = blockIdx.y * 8LL + threadIdx.y; r < rows; r += gridDim.y * 8LL) {
      const float d = dy[r * C + col];
      sg += d * (x[r * C + col] - mean[r]) * rstd[r];
      sb += d;
    }
  part_g[threadIdx.y][threadIdx.x] = sg;
  part_b[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && col < C) {
    for (int j = 1; j < 8; ++j) {
      sg += part_g[j][threadIdx.x];
      sb += part_b[j][threadIdx.x];
    }
    atomicAdd(dgamma + col, sg);
    atomicAdd(dbeta + col, sb);
  }
}

}  // namespace

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                       int64_t rows, int64_t C) {
  if (rows == 0) return;
  launch_layernorm_forward(x, nullptr, gamma, beta, y, mean, rstd, rows, C);
}

void residual_layernorm_forward(const float* x, const float* res, const float* gamma, const float* beta, float* y,
                                int64_t rows, int64_t C) {
  if (rows == 0) return;
  launch_layernorm_forward(x, res, gamma, beta, y, nullptr, nullptr, rows, C);
}

void layernorm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                        float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t C) {
  if (rows == 0) return;
  // Parameter gradients first: they read dy, which dx may overwrite.
  dim3 grid(blocks_for(C, 32), std::min<unsigned>(blocks_for(rows, 64), 1024));
  layernorm_param_grad_kernel<<<grid, dim3(32, 8), 0, stream()>>>(x, mean, rstd, dy, dgamma, dbeta, rows, (int)C);
  LT_CUDA_LAUNCH_CHECK();
  layernorm_dx_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream()>>>(x, gamma, mean, rstd, dy, dx, rows, (int)C);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
