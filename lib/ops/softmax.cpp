// Softmax over the last axis, max-subtracted so exp never overflows; each
// row is common/softmax_row.h's, as on the GPU.
#include "backend/dispatch.h"
#include "common/softmax_row.h"
#include "ops/ops.h"
#include "ops/simd_math.h"

namespace lt {
namespace {
constexpr int64_t kParallelMin = 1 << 14;

int64_t last_axis(const Tensor& x, const char* what) {
  check(x.ndim() >= 1 && x.dim(-1) > 0, std::string(what) + ": needs a non-empty last axis, got " + shape_str(x.shape()));
  return x.dim(-1);
}
}  // namespace

void softmax_forward(const Tensor& x, Tensor& y) {
  check_shape(y, x.shape(), "softmax_forward y");
  const int64_t C = last_axis(x, "softmax_forward"), rows = x.numel() / C;
  Device dev = common_device({&x, &y}, "softmax_forward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::softmax_forward(x.data(), y.data(), rows, C));

  const float* xp = x.data();
  float* yp = y.data();
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * C;
    float* yr = yp + r * C;
    const float s = softmax_exp_row(xr, yr, C, simd_math::OneLane{});
    const float inv = 1.f / s;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) yr[c] *= inv;
  }
}

void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  check_shape(dy, y.shape(), "softmax_backward dy");
  check_shape(dx, y.shape(), "softmax_backward dx");
  const int64_t C = last_axis(y, "softmax_backward"), rows = y.numel() / C;
  Device dev = common_device({&y, &dy, &dx}, "softmax_backward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::softmax_backward(y.data(), dy.data(), dx.data(), rows, C));

  const float* yp = y.data();
  const float* dyp = dy.data();
  float* dxp = dx.data();
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r)
    softmax_backward_row(yp + r * C, dyp + r * C, dxp + r * C, C, simd_math::OneLane{});
}

}  // namespace lt
