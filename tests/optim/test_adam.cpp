#include <cmath>

#include "optim/optimizer.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// A float64 transcription of torch.optim.Adam's single-tensor update
// (amsgrad off, weight_decay as L2 on the gradient).
struct ReferenceAdam {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  std::vector<double> exp_avg, exp_avg_sq;
  int step = 0;

  void update(std::vector<double>& p, std::vector<double> grad, double lr) {
    if (exp_avg.empty()) {
      exp_avg.assign(p.size(), 0);
      exp_avg_sq.assign(p.size(), 0);
    }
    step += 1;
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const double step_size = lr / bias_correction1;
    for (size_t i = 0; i < p.size(); ++i) {
      if (weight_decay != 0) grad[i] += weight_decay * p[i];
      exp_avg[i] = exp_avg[i] * beta1 + (1 - beta1) * grad[i];
      exp_avg_sq[i] = exp_avg_sq[i] * beta2 + (1 - beta2) * grad[i] * grad[i];
      const double denom = std::sqrt(exp_avg_sq[i]) / std::sqrt(bias_correction2) + eps;
      p[i] += -step_size * exp_avg[i] / denom;
    }
  }
};
}  // namespace

TEST_CASE("adam matches a float64 transcription of torch.optim.Adam over 20 steps") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (double weight_decay : {0.0, 0.05}) {
    INFO("weight_decay " << weight_decay);
    const int64_t n = rng.integer(1, 3000);
    Tensor params = rng.randn({n});
    std::vector<double> ref = to_double(params);
    AdamConfig config;
    config.weight_decay = weight_decay;
    config.beta1 = rng.uniform(0.8, 0.95);
    Adam opt(n, Device::cpu, config);
    ReferenceAdam reference;
    reference.weight_decay = weight_decay;
    reference.beta1 = config.beta1;
    for (int t = 0; t < 20; ++t) {
      Tensor grad = rng.randn({n}, rng.uniform(0.01, 2));
      const float lr = float(rng.uniform(1e-3, 5e-2));
      opt.step(params, grad, lr);
      reference.update(ref, to_double(grad), lr);
    }
    CHECK(opt.step_count() == 20);
    CHECK(rel_error(params, ref) < 1e-6);
    auto state = opt.state();
    CHECK(rel_error(state.at("exp_avg"), reference.exp_avg) < 1e-6);
    CHECK(rel_error(state.at("exp_avg_sq"), reference.exp_avg_sq) < 1e-6);
  }
}
