// Warp and block reductions, defined once for every kernel: a sum's rounding
// depends on the order its lanes are paired in, so each pattern has one
// definition and keeps the same order everywhere. The patterns differ on
// purpose (each kernel's results stay what they were):
// - warp_sum / warp_max: the xor butterfly (offsets 16, 8, ..., 1), which
//   leaves the result on every lane;
// - block_sum: shfl_down within each warp, then over the warps' partial sums
//   in warp 0, valid in thread 0 only;
// - lane_group_sum: xor over the lanes that share lane % Stride, offsets
//   ascending from Stride (the partial rows of linear_attention_step.cu).
// Internal linkage (static), so that every .cu file may include this one.
#pragma once

namespace lt::kernels {

static __device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
static __device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
static __device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
static __device__ __forceinline__ double warp_max(double v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block, valid in thread 0. Every thread must call it (blockDim a
// multiple of 32), and a second call needs a __syncthreads() before it.
static __device__ __forceinline__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x >> 5) ? warp_sums[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

// x[j] summed over the lanes equal modulo Stride (a power of two below 32),
// every element at each offset before the next offset.
template <int Stride, int N>
static __device__ __forceinline__ void lane_group_sum(float (&x)[N]) {
#pragma unroll
  for (int o = Stride; o < 32; o *= 2)
#pragma unroll
    for (int j = 0; j < N; ++j) x[j] += __shfl_xor_sync(0xffffffffu, x[j], o);
}

// The GPU's lanes of common/softmax_row.h: a warp, lane l taking entries
// l, l + 32, ...; every lane of the warp must take part.
struct WarpLanes {
  static constexpr int kStride = 32;
  int lane;
  __device__ int first() const { return lane; }
  static __device__ float exp(float x) { return expf(x); }
  static __device__ float max(float a, float b) { return fmaxf(a, b); }
  __device__ float reduce_max(float v) const { return warp_max(v); }
  __device__ float reduce_sum(float v) const { return warp_sum(v); }
};

}  // namespace lt::kernels
