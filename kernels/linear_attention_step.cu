// One recurrent step of causal linear attention (eq. 16-20) on the GPU: one
// warp per (n, h). The step is bound by reading and writing S, float32 or
// bfloat16 (sums stay float32; each element is rounded once per step, to
// nearest even, when it is stored, as on the CPU), so the kernel is built
// around moving S:
// - When a row of S is 2, 4, 8 or 16 vectors of 16 bytes (M = 16..128 for
//   bf16, 8..64 for float32), LPR lanes hold a row and every access is a 16-byte
//   vector; each lane loads its rows of a tile before the first store, and
//   the partial sums of the output are added across lanes by shuffles.
//   Scalar loads of a bf16 S left the kernel at 40% of the H100's bandwidth.
// - Otherwise lane l owns value columns l, l + 32, ..., one row of a tile per
//   coalesced access, and phi(q)[f], phi(k)[f] come from the lane holding
//   them by shuffle.
// The packed variant reads q, k and v straight from the rows of one qkv
// product and applies an elementwise phi to q and k as it loads them.
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "common/constants.h"
#include "cuda_check.cuh"
#include "feature_maps.cuh"
#include "kernels.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kWarps = 4;

__device__ float load(const float* p) { return *p; }
__device__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ void store(float* p, float x) { *p = x; }
__device__ void store(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

// Z += phi(k) (eq. 19), lanes striding over F; returns the denominator
// phi(q)^T Z + eps, summed over the warp.
template <class Phi>
__device__ float update_z(const float* __restrict__ q, const float* __restrict__ k, float* z, int F, int lane,
                          const Phi& phi) {
  float d = 0.f;
  for (int f = lane; f < F; f += 32) {
    const float zf = z[f] + phi(k[f]);
    z[f] = zf;
    d += phi(q[f]) * zf;
  }
  return warp_sum(d) + kLinearAttentionEps;
}

struct Identity {
  __device__ float operator()(float v) const { return v; }
};

// Where the queries, keys and values of pair p = n H + h start: q and k rows
// of n are qk_row floats apart, v rows v_row. Its state is pair
// rows[n] H + h of S and Z (a pool's row), or p when rows is null.
struct StepLayout {
  const float *q, *k, *v;
  int heads;
  long long qk_row, v_row;
  const int64_t* rows;
};

__device__ long long state_pair(const StepLayout& in, long long n, long long h) {
  return (in.rows ? (long long)in.rows[n] : n) * in.heads + h;
}

// Row -1 pads a step to its batch-size bucket: no state, and zeros out.
__device__ bool padding(const StepLayout& in, long long n, float* o, int M, int lane) {
  if (!in.rows || in.rows[n] >= 0) return false;
  for (int m = lane; m < M; m += 32) o[m] = 0.f;
  return true;
}

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
  if (padding(in, n, out + p * M, M, lane)) return;
  const long long sp = state_pair(in, n, h);
  T* s = S + sp * F * M;
  float *z = Z + sp * F, *o = out + p * M;

  const float den = update_z(q, k, z, F, lane, phi);

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

// 16 bytes of S as floats, and back (rounded to nearest even for bf16).
template <typename T>
constexpr int kVec = 16 / sizeof(T);

template <typename T>
__device__ void unpack(const uint4& raw, float (&x)[kVec<T>]) {
  if constexpr (std::is_same_v<T, float>) {
    x[0] = __uint_as_float(raw.x), x[1] = __uint_as_float(raw.y), x[2] = __uint_as_float(raw.z),
    x[3] = __uint_as_float(raw.w);
  } else {
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[i]));
      x[2 * i] = f.x, x[2 * i + 1] = f.y;
    }
  }
}

template <typename T>
__device__ uint4 pack(const float (&x)[kVec<T>]) {
  if constexpr (std::is_same_v<T, float>) {
    return {__float_as_uint(x[0]), __float_as_uint(x[1]), __float_as_uint(x[2]), __float_as_uint(x[3])};
  } else {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const __nv_bfloat162 b = __floats2bfloat162_rn(x[2 * i], x[2 * i + 1]);
      w[i] = *reinterpret_cast<const unsigned*>(&b);
    }
    return {w[0], w[1], w[2], w[3]};
  }
}

// M = LPR * kVec<T>: lane = r * LPR + c holds columns [c kVec, (c + 1) kVec)
// of rows r, r + RPP, ... A tile is U rows per lane, loaded before the first
// store (at most 8 vectors, 128 bytes, in flight per lane).
template <typename T, class Phi, int LPR>
__global__ void linear_attention_step_vec_kernel(StepLayout in, T* __restrict__ S, float* __restrict__ Z,
                                                 float* __restrict__ out, long long pairs, int F) {
  constexpr int V = kVec<T>, M = LPR * V, RPP = 32 / LPR, U = LPR < 8 ? LPR : 8;
  const long long p = blockIdx.x * (long long)kWarps + threadIdx.y;
  if (p >= pairs) return;  // a whole warp leaves together
  const int lane = threadIdx.x, c = lane % LPR, r = lane / LPR;
  const Phi phi;
  const long long n = p / in.heads, h = p % in.heads;
  const float* __restrict__ q = in.q + n * in.qk_row + h * F;
  const float* __restrict__ k = in.k + n * in.qk_row + h * F;
  const float* __restrict__ val = in.v + n * in.v_row + h * M + c * V;
  if (padding(in, n, out + p * M, M, lane)) return;
  const long long sp = state_pair(in, n, h);
  T* s = S + sp * F * M + c * V;
  float *z = Z + sp * F, *o = out + p * M + c * V;

  const float den = update_z(q, k, z, F, lane, phi);

  float vm[V], acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) vm[j] = val[j], acc[j] = 0.f;
  for (int f0 = 0; f0 < F; f0 += U * RPP) {
    uint4 raw[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int f = f0 + u * RPP + r;
      if (f < F) raw[u] = *reinterpret_cast<const uint4*>(s + (long long)f * M);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int f = f0 + u * RPP + r;
      if (f < F) {
        const float kf = phi(k[f]), qf = phi(q[f]);
        float x[V];
        unpack<T>(raw[u], x);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          x[j] += kf * vm[j];
          acc[j] += qf * x[j];
        }
        *reinterpret_cast<uint4*>(s + (long long)f * M) = pack<T>(x);
      }
    }
  }
  lane_group_sum<LPR>(acc);
  if (r == 0)
#pragma unroll
    for (int j = 0; j < V; ++j) o[j] = acc[j] / den;
}

template <typename T, class Phi>
void launch_step(const StepLayout& in, T* S, float* Z, float* out, int64_t pairs, int64_t F, int64_t M) {
  if (pairs == 0) return;
  if ((pairs + kWarps - 1) / kWarps > 0x7fffffffLL)
    throw lt::Error("linear_attention_step: N*H = " + std::to_string(pairs) + " exceeds the CUDA grid");
  const unsigned blocks = blocks_for(pairs, kWarps);
  const dim3 threads(32, kWarps);
  const bool vectors = M % kVec<T> == 0 && reinterpret_cast<uintptr_t>(S) % 16 == 0;
  switch (vectors ? M / kVec<T> : 0) {
    case 2: linear_attention_step_vec_kernel<T, Phi, 2><<<blocks, threads, 0, stream()>>>(in, S, Z, out, pairs, (int)F); break;
    case 4: linear_attention_step_vec_kernel<T, Phi, 4><<<blocks, threads, 0, stream()>>>(in, S, Z, out, pairs, (int)F); break;
    case 8: linear_attention_step_vec_kernel<T, Phi, 8><<<blocks, threads, 0, stream()>>>(in, S, Z, out, pairs, (int)F); break;
    case 16: linear_attention_step_vec_kernel<T, Phi, 16><<<blocks, threads, 0, stream()>>>(in, S, Z, out, pairs, (int)F); break;
    default: linear_attention_step_kernel<T, Phi><<<blocks, threads, 0, stream()>>>(in, S, Z, out, pairs, (int)F, (int)M);
  }
  LT_CUDA_LAUNCH_CHECK();
}

// fq, fk [N, H, F] and v [N, H, M], each contiguous.
StepLayout unpacked(const float* fq, const float* fk, const float* v, int64_t H, int64_t F, int64_t M,
                    const int64_t* rows) {
  return {fq, fk, v, (int)H, H * F, H * M, rows};
}

template <typename T>
void launch_packed(const float* qkv, Elementwise phi, T* S, float* Z, float* out, int64_t N, int64_t H, int64_t E,
                   const int64_t* rows) {
  const StepLayout in{qkv, qkv + H * E, qkv + 2 * H * E, (int)H, 3 * H * E, 3 * H * E, rows};
  switch (phi) {
    case Elementwise::relu: return launch_step<T, Relu>(in, S, Z, out, N * H, E, E);
    case Elementwise::elu_plus_one: return launch_step<T, EluPlusOne>(in, S, Z, out, N * H, E, E);
    case Elementwise::none: break;
  }
  throw lt::Error("linear_attention_step_packed: the fused step needs an elementwise feature map");
}
}  // namespace

void linear_attention_step(const float* fq, const float* fk, const float* v, float* S, float* Z, float* out,
                           int64_t N, int64_t H, int64_t F, int64_t M, const int64_t* rows) {
  launch_step<float, Identity>(unpacked(fq, fk, v, H, F, M, rows), S, Z, out, N * H, F, M);
}

void linear_attention_step_bf16(const float* fq, const float* fk, const float* v, uint16_t* S, float* Z,
                                float* out, int64_t N, int64_t H, int64_t F, int64_t M, const int64_t* rows) {
  launch_step<__nv_bfloat16, Identity>(unpacked(fq, fk, v, H, F, M, rows), reinterpret_cast<__nv_bfloat16*>(S), Z,
                                       out, N * H, F, M);
}

void linear_attention_step_packed(const float* qkv, Elementwise phi, float* S, float* Z, float* out, int64_t N,
                                  int64_t H, int64_t E, const int64_t* rows) {
  launch_packed(qkv, phi, S, Z, out, N, H, E, rows);
}

void linear_attention_step_packed_bf16(const float* qkv, Elementwise phi, uint16_t* S, float* Z, float* out,
                                       int64_t N, int64_t H, int64_t E, const int64_t* rows) {
  launch_packed(qkv, phi, reinterpret_cast<__nv_bfloat16*>(S), Z, out, N, H, E, rows);
}

}  // namespace lt::kernels
