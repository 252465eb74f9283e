// Elementwise sum and in-place accumulation: the residual connection and the
// gradient fan-in of a tensor used twice; and layout copies (columns, swapped
// axes). Plain loops the compiler vectorises; OpenMP only pays off above a
// few tens of thousands of elements.
#include <algorithm>

#include "backend/dispatch.h"
#include "ops/ops.h"

namespace lt {
namespace {
constexpr int64_t kParallelMin = 1 << 15;
}

void add(const Tensor& a, const Tensor& b, Tensor& y) {
  check(a.shape() == b.shape() && a.shape() == y.shape(),
        "add: shapes differ: a " + shape_str(a.shape()) + ", b " + shape_str(b.shape()) + ", y " +
            shape_str(y.shape()));
  Device dev = common_device({&a, &b, &y}, "add");
  const int64_t n = a.numel();
  if (dev == Device::cuda) LT_ON_CUDA(cuda::add(a.data(), b.data(), y.data(), n));

  // No __restrict__: y may alias a or b, which an elementwise loop tolerates.
  const float* ap = a.data();
  const float* bp = b.data();
  float* yp = y.data();
#pragma omp parallel for simd schedule(static) if (parallel : n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) yp[i] = ap[i] + bp[i];
}

void accumulate(Tensor& dst, const Tensor& src) {
  check(dst.shape() == src.shape(),
        "accumulate: dst " + shape_str(dst.shape()) + " and src " + shape_str(src.shape()) + " differ");
  Device dev = common_device({&dst, &src}, "accumulate");
  const int64_t n = dst.numel();
  if (dev == Device::cuda) LT_ON_CUDA(cuda::accumulate(dst.data(), src.data(), n));

  float* dp = dst.data();
  const float* sp = src.data();
#pragma omp parallel for simd schedule(static) if (parallel : n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) dp[i] += sp[i];
}

void copy_columns(const Tensor& src, int64_t first, Tensor& dst) {
  check(src.ndim() >= 1 && dst.ndim() >= 1, "copy_columns: needs tensors with a last axis");
  const int64_t C = src.dim(-1), c = dst.dim(-1);
  const int64_t rows = C > 0 ? src.numel() / C : 0;
  check(first >= 0 && first + c <= C && dst.numel() == rows * c,
        "copy_columns: columns " + std::to_string(first) + ".." + std::to_string(first + c) + " of " +
            shape_str(src.shape()) + " do not fit " + shape_str(dst.shape()));
  Device dev = common_device({&src, &dst}, "copy_columns");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::copy_columns(src.data(), C, first, dst.data(), rows, c));

  const float* sp = src.data() + first;
  float* dp = dst.data();
  for (int64_t r = 0; r < rows; ++r) std::copy_n(sp + r * C, c, dp + r * c);
}

void swap_leading_axes(const Tensor& src, Tensor& dst) {
  check(src.ndim() >= 2, "swap_leading_axes: needs two leading axes, got " + shape_str(src.shape()));
  Shape swapped = src.shape();
  std::swap(swapped[0], swapped[1]);
  check_shape(dst, swapped, "swap_leading_axes output");
  Device dev = common_device({&src, &dst}, "swap_leading_axes");
  const int64_t n0 = src.dim(0), n1 = src.dim(1), C = n0 * n1 > 0 ? src.numel() / (n0 * n1) : 0;
  if (dev == Device::cuda) LT_ON_CUDA(cuda::swap_leading_axes(src.data(), n0, n1, C, dst.data()));

  const float* sp = src.data();
  float* dp = dst.data();
  for (int64_t a = 0; a < n0; ++a)
    for (int64_t b = 0; b < n1; ++b) std::copy_n(sp + (a * n1 + b) * C, C, dp + (b * n0 + a) * C);
}

}  // namespace lt
