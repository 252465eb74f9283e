// Elementwise sum and in-place accumulation: the residual connection and the
// gradient fan-in of a tensor used twice; and column copies. Plain loops the compiler vectorises;
// OpenMP only pays off above a few tens of thousands of elements.
#include <algorithm>

#include "backend/dispatch.h"
#include "lt/ops.h"

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

}  // namespace lt
