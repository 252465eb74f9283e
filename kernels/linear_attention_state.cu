// The recurrent state of a whole prefix: cuBLAS strided-batched gemm over the
// heads of each batch element, and a column-sum kernel for Z. A bfloat16 S is
// summed in float32 scratch and rounded once.
#include <cuda_bf16.h>

#include "cuda_check.cuh"
#include "kernels.h"

namespace lt::cuda {
namespace {
// One thread per (n, h, f): Z = sum over l of fk.
__global__ void key_sum_kernel(const float* fk, float* Z, long long N, long long L, long long H, long long F) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= N * H * F) return;
  long long f = i % F, h = (i / F) % H, n = i / (F * H);
  const float* k = fk + (n * L * H + h) * F + f;
  float s = 0.f;
  for (long long l = 0; l < L; ++l) s += k[l * H * F];
  Z[i] = s;
}

__global__ void round_to_bf16_kernel(const float* x, __nv_bfloat16* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16_rn(x[i]);
}
}  // namespace

void linear_attention_state(const float* fk, const float* v, float* S, float* Z, int64_t N, int64_t L,
                            int64_t H, int64_t F, int64_t M) {
  const float one = 1.f, zero = 0.f;
  // Row-major S[h] (F x M) = fk_h^T (F x L) v_h (L x M); column-major that is
  // S^T (M x F) = v_h^T (M x L) fk_h (L x F), with v_h^T stored as v (ld H*M).
  for (int64_t n = 0; n < N; ++n)
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_T, (int)M, (int)F, (int)L, &one,
                                              v + n * L * H * M, (int)(H * M), M, fk + n * L * H * F,
                                              (int)(H * F), F, &zero, S + n * H * F * M, (int)M, F * M, (int)H));
  key_sum_kernel<<<blocks_for(N * H * F, 256), 256>>>(fk, Z, N, L, H, F);
  LT_CUDA_LAUNCH_CHECK();
}

void linear_attention_state_bf16(const float* fk, const float* v, uint16_t* S, float* Z, int64_t N, int64_t L,
                                 int64_t H, int64_t F, int64_t M) {
  const int64_t n = N * H * F * M;
  float* sums = scratch(size_t(n));
  linear_attention_state(fk, v, sums, Z, N, L, H, F, M);
  round_to_bf16_kernel<<<blocks_for(n, 256), 256>>>(sums, reinterpret_cast<__nv_bfloat16*>(S), n);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::cuda
