// Adam exactly as torch.optim.Adam (Kingma & Ba 2015, bias-corrected moments;
// weight_decay as an L2 term added to the gradient).
#include <cmath>

#include "optim/moment_update.h"
#include "optim/optimizer.h"

namespace lt {

Adam::Adam(int64_t numel, Device device, AdamConfig config) : Optimizer(numel, device), config_(config) {}

void Adam::step(Tensor& params, const Tensor& grad, float lr) {
  check_step_args(params, grad, "adam step");
  ++step_;
  const double t = double(step_);
  const double bias_correction1 = 1 - std::pow(config_.beta1, t);
  const double bias_correction2 = 1 - std::pow(config_.beta2, t);
  // p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
  MomentUpdate u{config_.beta1, config_.beta2, config_.eps};
  u.l2 = config_.weight_decay;
  u.step = lr / bias_correction1;
  u.v_scale = 1 / std::sqrt(bias_correction2);
  moment_update(params, grad, exp_avg_, exp_avg_sq_, u);
}

}  // namespace lt
