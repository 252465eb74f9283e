// Sinusoidal position code (Vaswani et al. 2017, as in the reference's image
// and speech models) and its concatenation to the features. The angles are
// computed in double and rounded once, so positions in the tens of thousands
// keep full float accuracy.
#include <cmath>
#include <cstring>

#include "backend/dispatch.h"
#include "ops/ops.h"

namespace lt {
namespace {
constexpr int64_t kParallelMin = 1 << 14;
}

// pe[p, 2i] = sin(p div_i), pe[p, 2i+1] = cos(p div_i), div_i = exp(2i (-ln 10000 / D)).
void position_code(int64_t offset, Tensor& pe) {
  // Called per row by a pool's steps: messages are built only on failure.
  if (pe.ndim() != 2) throw Error("position_code: pe must be [L, D], got " + shape_str(pe.shape()));
  const int64_t L = pe.dim(0), D = pe.dim(1);
  if (D % 2 != 0)
    throw Error("position_code: the code width D must be even (sin, cos pairs), got pe " + shape_str(pe.shape()));
  Device dev = common_device({&pe}, "position_code");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::position_code(offset, pe.data(), L, D));

  float* out = pe.data();
  const double log_base = -std::log(10000.0) / static_cast<double>(D);
#pragma omp parallel for schedule(static) if (L * D >= kParallelMin)
  for (int64_t l = 0; l < L; ++l) {
    const double p = static_cast<double>(offset + l);
    for (int64_t i = 0; i < D / 2; ++i) {
      const double angle = p * std::exp(static_cast<double>(2 * i) * log_base);
      out[l * D + 2 * i] = static_cast<float>(std::sin(angle));
      out[l * D + 2 * i + 1] = static_cast<float>(std::cos(angle));
    }
  }
}

void concat_position_forward(const Tensor& x, const Tensor& pe, Tensor& y) {
  // A speech step's every call: the message is built only on failure.
  if (!(x.ndim() == 3 && pe.ndim() == 2 && pe.dim(0) == x.dim(1)))
    throw Error("concat_position_forward: needs x [N, L, C] and pe [L, D], got x " + shape_str(x.shape()) + " and pe " +
                shape_str(pe.shape()));
  const int64_t N = x.dim(0), L = x.dim(1), C = x.dim(2), D = pe.dim(1);
  check_shape(y, {N, L, C + D}, "concat_position_forward y");
  Device dev = common_device({&x, &pe, &y}, "concat_position_forward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::concat_position_forward(x.data(), pe.data(), y.data(), N, L, C, D));

  const float* xp = x.data();
  const float* pp = pe.data();
  float* yp = y.data();
#pragma omp parallel for schedule(static) if (N * L * (C + D) >= kParallelMin)
  for (int64_t r = 0; r < N * L; ++r) {
    std::memcpy(yp + r * (C + D), xp + r * C, C * sizeof(float));
    std::memcpy(yp + r * (C + D) + C, pp + (r % L) * D, D * sizeof(float));
  }
}

void concat_position_backward(const Tensor& dy, Tensor& dx) {
  check(dy.ndim() == 3 && dx.ndim() == 3 && dy.dim(0) == dx.dim(0) && dy.dim(1) == dx.dim(1) &&
            dy.dim(2) >= dx.dim(2),
        "concat_position_backward: needs dy [N, L, C + D] and dx [N, L, C], got dy " + shape_str(dy.shape()) +
            " and dx " + shape_str(dx.shape()));
  const int64_t rows = dx.dim(0) * dx.dim(1), C = dx.dim(2), W = dy.dim(2);
  Device dev = common_device({&dy, &dx}, "concat_position_backward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::concat_position_backward(dy.data(), dx.data(), rows, C, W));

  const float* dyp = dy.data();
  float* dxp = dx.data();
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dxp + r * C, dyp + r * W, C * sizeof(float));
}

}  // namespace lt
