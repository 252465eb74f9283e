// One recurrent step of causal linear attention (eq. 16-20) on the GPU: one
// warp per (n, h). Lane l owns value columns l, l + 32, ...: it reads and
// writes its column of S once (each row of S one coalesced 128-byte access),
// and phi(q)[f], phi(k)[f] come from the lane holding them by shuffle, so no
// block-wide reduction or barrier is needed. The step is bound by reading and
// writing S, so a tile's 32 rows are all loaded before the first store. S is
// float32, or bfloat16 for half the traffic (sums stay float32; each element
// is rounded once per step, to nearest even, when it is stored, as on the CPU).
// The packed variant reads q, k and v straight from the rows of one qkv
// product and applies an elementwise phi to q and k as it loads them.
#include <cuda_bf16.h>

#include "cuda_check.cuh"
#include "feature_maps.cuh"
#include "kernels.h"
#include "lt/attention.h"

namespace lt::cuda {
namespace {

constexpr int kWarps = 4;

__device__ float warp_sum(float x) {
  for (int off = 16; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

__device__ float load(const float* p) { return *p; }
__device__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ void store(float* p, float x) { *p = x; }
__device__ void store(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

struct Identity {
  __device__ float operator()(float v) const { return v; }
};

// Where the queries, keys and values of pair p = n H + h start: q and k rows
// of n are qk_row floats apart, v rows v_row.
struct StepLayout {
  const float *q, *k, *v;
  int heads;
  long long qk_row, v_row;
};

template <typename T, class Phi>
__global__ void linear_attention_step_kernel(StepLayout in, T* __restrict__ S, float* __restrict__ Z,
                                             float* __restrict__ out, long long pairs, int F, int M) {
  const long long p = blockIdx.x * (long long)kWarps + threadIdx.y;
  if (p >= pairs) return;  // a whole warp leaves together
  const int lane = threadIdx.x;
  const Phi phi;
  const long long n = p / in.heads, h = p % in.heads;
  const float* __restrict__ q = in.q + n * in.qk_row + h * F;
  const float* __restrict__ k = in.k + n * in.qk_row + h * F;
  const float* __restrict__ val = in.v + n * in.v_row + h * M;
  T* s = S + p * F * M;
  float *z = Z + p * F, *o = out + p * M;

  // Z += phi(k) (eq. 19) and the denominator phi(q)^T Z.
  float d = 0.f;
  for (int f = lane; f < F; f += 32) {
    const float zf = z[f] + phi(k[f]);
    z[f] = zf;
    d += phi(q[f]) * zf;
  }
  const float den = warp_sum(d) + kLinearAttentionEps;

  // S += phi(k) v^T (eq. 18) and out = phi(q)^T S / den (eq. 20).
  for (int m0 = 0; m0 < M; m0 += 32) {
    const int m = m0 + lane;
    const bool mine = m < M;
    const float vm = mine ? val[m] : 0.f;
    float acc = 0.f;
    for (int f0 = 0; f0 < F; f0 += 32) {
      const int nf = min(32, F - f0);
      const float q_lane = lane < nf ? phi(q[f0 + lane]) : 0.f, k_lane = lane < nf ? phi(k[f0 + lane]) : 0.f;
      T* col = s + (long long)f0 * M + m;
      float sf[32];  // the tile's rows of this column, all loaded before the first store
#pragma unroll
      for (int j = 0; j < 32; ++j) sf[j] = (mine && j < nf) ? load(col + (long long)j * M) : 0.f;
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        const float qf = __shfl_sync(0xffffffffu, q_lane, j);
        const float kf = __shfl_sync(0xffffffffu, k_lane, j);
        if (mine && j < nf) {
          sf[j] += kf * vm;
          store(col + (long long)j * M, sf[j]);
          acc += qf * sf[j];
        }
      }
    }
    if (mine) o[m] = acc / den;
  }
}

template <typename T, class Phi>
void launch_step(const StepLayout& in, T* S, float* Z, float* out, int64_t pairs, int64_t F, int64_t M) {
  if (pairs == 0) return;
  if ((pairs + kWarps - 1) / kWarps > 0x7fffffffLL)
    throw lt::Error("linear_attention_step: N*H = " + std::to_string(pairs) + " exceeds the CUDA grid");
  linear_attention_step_kernel<T, Phi><<<blocks_for(pairs, kWarps), dim3(32, kWarps)>>>(in, S, Z, out, pairs,
                                                                                       (int)F, (int)M);
  LT_CUDA_LAUNCH_CHECK();
}

// One pair per "head" of a contiguous [pairs, F] layout.
StepLayout unpacked(const float* fq, const float* fk, const float* v, int64_t F, int64_t M) {
  return {fq, fk, v, 1, F, M};
}

template <typename T>
void launch_packed(const float* qkv, Elementwise phi, T* S, float* Z, float* out, int64_t N, int64_t H, int64_t E) {
  const StepLayout in{qkv, qkv + H * E, qkv + 2 * H * E, (int)H, 3 * H * E, 3 * H * E};
  switch (phi) {
    case Elementwise::relu: return launch_step<T, Relu>(in, S, Z, out, N * H, E, E);
    case Elementwise::elu_plus_one: return launch_step<T, EluPlusOne>(in, S, Z, out, N * H, E, E);
    case Elementwise::none: break;
  }
  throw lt::Error("linear_attention_step_packed: the fused step needs an elementwise feature map");
}
}  // namespace

void linear_attention_step(const float* fq, const float* fk, const float* v, float* S, float* Z, float* out,
                           int64_t pairs, int64_t F, int64_t M) {
  launch_step<float, Identity>(unpacked(fq, fk, v, F, M), S, Z, out, pairs, F, M);
}

void linear_attention_step_bf16(const float* fq, const float* fk, const float* v, uint16_t* S, float* Z,
                                float* out, int64_t pairs, int64_t F, int64_t M) {
  launch_step<__nv_bfloat16, Identity>(unpacked(fq, fk, v, F, M), reinterpret_cast<__nv_bfloat16*>(S), Z, out,
                                       pairs, F, M);
}

void linear_attention_step_packed(const float* qkv, Elementwise phi, float* S, float* Z, float* out, int64_t N,
                                  int64_t H, int64_t E) {
  launch_packed(qkv, phi, S, Z, out, N, H, E);
}

void linear_attention_step_packed_bf16(const float* qkv, Elementwise phi, uint16_t* S, float* Z, float* out,
                                       int64_t N, int64_t H, int64_t E) {
  launch_packed(qkv, phi, reinterpret_cast<__nv_bfloat16*>(S), Z, out, N, H, E);
}

}  // namespace lt::cuda
