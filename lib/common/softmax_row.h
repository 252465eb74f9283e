// The softmax of a row, forward and backward, once for the CPU (ops/softmax.cpp,
// attention/softmax_attention.cpp) and the GPU (kernels/softmax.cu,
// kernels/softmax_attention.cu). The row is split among lanes: on the CPU one
// lane, the loops vectorised by `omp simd`; on the GPU a warp, lane l taking
// entries l, l + 32, ... A Lanes type brings:
//   kStride                  entries between a lane's consecutive ones
//   first()                  this lane's first entry
//   exp(x), max(a, b)        the side's own exp and max
//   reduce_max(v), reduce_sum(v)   over the lanes, the result on every lane
// so each side keeps the floats it computed, and the sums keep their order.
#pragma once
#include <cmath>

#include "common/host_device.h"

// The CPU's loops are `omp simd` loops and reductions; nvcc sees no pragma.
#if defined(__CUDACC__)
#define LT_SIMD
#define LT_SIMD_REDUCTION(op, var)
#else
#define LT_SIMD_PRAGMA(text) _Pragma(#text)
#define LT_SIMD LT_SIMD_PRAGMA(omp simd)
#define LT_SIMD_REDUCTION(op, var) LT_SIMD_PRAGMA(omp simd reduction(op : var))
#endif

namespace lt {

// y[s] = exp(x[s] - max_j x[j]) for s < n (this lane's s; y may be x);
// returns sum_s y[s] over the whole row. The caller scales by its inverse,
// and writes what a masked row holds past n.
template <class Lanes, class Index>
LT_HOST_DEVICE inline float softmax_exp_row(const float* x, float* y, Index n, const Lanes& lanes) {
  float m = -INFINITY;
  LT_SIMD_REDUCTION(max, m)
  for (Index s = lanes.first(); s < n; s += Lanes::kStride) m = Lanes::max(m, x[s]);
  m = lanes.reduce_max(m);
  float sum = 0.f;
  LT_SIMD_REDUCTION(+, sum)
  for (Index s = lanes.first(); s < n; s += Lanes::kStride) {
    const float e = Lanes::exp(x[s] - m);
    y[s] = e;
    sum += e;
  }
  return lanes.reduce_sum(sum);
}

// dx = y * (dy - <dy, y>) over a row of n: the softmax Jacobian
// diag(y) - y y^T applied to dy (dx may be dy).
template <class Lanes, class Index>
LT_HOST_DEVICE inline void softmax_backward_row(const float* y, const float* dy, float* dx, Index n,
                                                const Lanes& lanes) {
  float dot = 0.f;
  LT_SIMD_REDUCTION(+, dot)
  for (Index s = lanes.first(); s < n; s += Lanes::kStride) dot += y[s] * dy[s];
  dot = lanes.reduce_sum(dot);
  LT_SIMD
  for (Index s = lanes.first(); s < n; s += Lanes::kStride) dx[s] = y[s] * (dy[s] - dot);
}

}  // namespace lt
