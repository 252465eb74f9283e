// The one elementwise pass behind Adam and RAdam (internal to lib/optim).
#pragma once
#include "core/tensor.h"

namespace lt {

// Fused over the flat buffers, enough for both optimizers' branches:
//   g' = g + l2 * p                        (torch Adam's weight decay)
//   m  = beta1 * m + (1 - beta1) * g'
//   v  = beta2 * v + (1 - beta2) * g'^2
//   p  = decay * p - step * (use_denominator ? m / (sqrt(v) * v_scale + eps) : m)
// Scalars are given in double and applied in float, as torch applies Python
// scalars to float tensors.
struct MomentUpdate {
  double beta1, beta2, eps;
  double l2 = 0, decay = 1, step = 0, v_scale = 1;
  bool use_denominator = true;
};

void moment_update(Tensor& params, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                   const MomentUpdate& u);

}  // namespace lt
