// One recurrent step of causal linear attention (eq. 16-20) on the GPU: one
// block per (n, h). Threads (tx, ty) own value column m0 + tx and feature rows
// ty, ty + 8, ...: each reads and writes its S entries once (coalesced along
// M), and the block sums the per-row-group partials of phi(q)^T S.
#include "cuda_check.cuh"
#include "kernels.h"
#include "lt/attention.h"

namespace lt::cuda {
namespace {

constexpr int kCols = 32, kRowGroups = 8;

__device__ float warp_sum(float x) {
  for (int off = 16; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

__global__ void linear_attention_step_kernel(const float* fq, const float* fk, const float* v, float* S, float* Z,
                                             float* out, int F, int M) {
  __shared__ float partial[kRowGroups][kCols];
  __shared__ float den_parts[kRowGroups];
  const long long p = blockIdx.x;
  const float *q = fq + p * F, *k = fk + p * F, *val = v + p * M;
  float *s = S + p * F * M, *z = Z + p * F, *o = out + p * M;
  const int tx = threadIdx.x, ty = threadIdx.y;

  // Z += phi(k) (eq. 19) and the denominator phi(q)^T Z.
  float d = 0.f;
  for (int f = ty * kCols + tx; f < F; f += kCols * kRowGroups) {
    const float zf = z[f] + k[f];
    z[f] = zf;
    d += q[f] * zf;
  }
  d = warp_sum(d);  // a warp is one row of the block: fixed ty
  if (tx == 0) den_parts[ty] = d;
  __syncthreads();
  float den = kLinearAttentionEps;
  for (int g = 0; g < kRowGroups; ++g) den += den_parts[g];

  // S += phi(k) v^T (eq. 18) and out = phi(q)^T S / den (eq. 20), 32 columns at a time.
  for (int m0 = 0; m0 < M; m0 += kCols) {
    const int m = m0 + tx;
    float acc = 0.f;
    if (m < M) {
      const float vm = val[m];
      for (int f = ty; f < F; f += kRowGroups) {
        const float sf = s[(long long)f * M + m] + k[f] * vm;
        s[(long long)f * M + m] = sf;
        acc += q[f] * sf;
      }
    }
    partial[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && m < M) {
      float num = 0.f;
      for (int g = 0; g < kRowGroups; ++g) num += partial[g][tx];
      o[m] = num / den;
    }
    __syncthreads();  // partial is reused by the next column tile
  }
}

}  // namespace

void linear_attention_step(const float* fq, const float* fk, const float* v, float* S, float* Z, float* out,
                           int64_t pairs, int64_t F, int64_t M) {
  if (pairs == 0) return;
  if (pairs > 0x7fffffffLL)
    throw lt::Error("linear_attention_step: N*H = " + std::to_string(pairs) + " exceeds the CUDA grid (2^31 - 1)");
  linear_attention_step_kernel<<<(unsigned)pairs, dim3(kCols, kRowGroups)>>>(fq, fk, v, S, Z, out, (int)F, (int)M);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::cuda
