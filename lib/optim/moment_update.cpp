// CPU loop of the fused Adam-family update (kernels/optim.cu on the GPU).
#include "optim/moment_update.h"

#include <cmath>

#include "backend/dispatch.h"

namespace lt {

void moment_update(Tensor& params, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                   const MomentUpdate& u) {
  const int64_t n = params.numel();
  float* p = params.data();
  const float* g = grad.data();
  float* m = exp_avg.data();
  float* v = exp_avg_sq.data();
  const float beta1 = float(u.beta1), one_minus_beta1 = float(1 - u.beta1);
  const float beta2 = float(u.beta2), one_minus_beta2 = float(1 - u.beta2);
  const float eps = float(u.eps), l2 = float(u.l2), decay = float(u.decay), step = float(u.step);
  const float v_scale = float(u.v_scale);
  if (params.device() == Device::cuda)
    LT_ON_CUDA(cuda::moment_update(p, g, m, v, n, beta1, one_minus_beta1, beta2, one_minus_beta2, eps,
                                   l2, decay, step, v_scale, u.use_denominator));

  const bool use_denominator = u.use_denominator;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] + l2 * p[i];
    const float mi = beta1 * m[i] + one_minus_beta1 * gi;
    const float vi = beta2 * v[i] + one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float direction = use_denominator ? mi / (std::sqrt(vi) * v_scale + eps) : mi;
    p[i] = decay * p[i] - step * direction;
  }
}

}  // namespace lt
