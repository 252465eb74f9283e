// Rectified Adam (Liu et al. 2020, "On the Variance of the Adaptive Learning
// Rate and Beyond") exactly as the reference's image-generation/radam.py:
// the variance of the adaptive rate is tractable only once the approximated
// SMA length N_sma reaches 5; until then the update is SGD with momentum.
// Weight decay is decoupled (p -= lr * wd * p) and applied in both branches.
#include <cmath>

#include "optim/moment_update.h"
#include "optim/optimizer.h"

namespace lt {

RAdam::RAdam(int64_t numel, Device device, RAdamConfig config)
    : Optimizer(numel, device), config_(config) {}

void RAdam::step(Tensor& params, const Tensor& grad, float lr) {
  check_step_args(params, grad, "radam step");
  ++step_;
  const double t = double(step_), beta1 = config_.beta1, beta2 = config_.beta2;
  const double beta2_t = std::pow(beta2, t);
  const double n_sma_max = 2 / (1 - beta2) - 1;
  const double n_sma = n_sma_max - 2 * t * beta2_t / (1 - beta2_t);
  const double bias_correction1 = 1 - std::pow(beta1, t);

  MomentUpdate u{beta1, beta2, config_.eps};
  if (n_sma >= 5) {  // rectified: p -= lr * r_t / bc1 * m / (sqrt(v) + eps)
    const double rectification = std::sqrt((1 - beta2_t) * (n_sma - 4) / (n_sma_max - 4) *
                                           (n_sma - 2) / n_sma * n_sma_max / (n_sma_max - 2));
    u.decay = 1 - config_.weight_decay * lr;
    u.step = rectification / bias_correction1 * lr;
  } else if (config_.degenerated_to_sgd) {  // p -= lr * m / bc1
    u.decay = 1 - config_.weight_decay * lr;
    u.step = lr / bias_correction1;
    u.use_denominator = false;
  } else {  // the moments still move; the parameters do not
    u.use_denominator = false;
  }
  moment_update(params, grad, exp_avg_, exp_avg_sq_, u);
}

}  // namespace lt
