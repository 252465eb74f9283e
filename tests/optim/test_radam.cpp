#include <cmath>

#include "optim/optimizer.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// A float64 transcription of the reference's RAdam.step (radam.py) for one
// parameter tensor, without its clipping (tested with clip_grad_norm).
struct ReferenceRAdam {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
  bool degenerated_to_sgd = true;
  std::vector<double> exp_avg, exp_avg_sq;
  int step = 0;
  int sgd_steps = 0, rectified_steps = 0;

  void update(std::vector<double>& p, const std::vector<double>& grad, double lr) {
    if (exp_avg.empty()) {
      exp_avg.assign(p.size(), 0);
      exp_avg_sq.assign(p.size(), 0);
    }
    for (size_t i = 0; i < p.size(); ++i) {
      exp_avg_sq[i] = exp_avg_sq[i] * beta2 + (1 - beta2) * grad[i] * grad[i];
      exp_avg[i] = exp_avg[i] * beta1 + (1 - beta1) * grad[i];
    }
    step += 1;
    const double beta2_t = std::pow(beta2, step);
    const double N_sma_max = 2 / (1 - beta2) - 1;
    const double N_sma = N_sma_max - 2 * step * beta2_t / (1 - beta2_t);
    double step_size;
    if (N_sma >= 5)
      step_size = std::sqrt((1 - beta2_t) * (N_sma - 4) / (N_sma_max - 4) * (N_sma - 2) / N_sma *
                            N_sma_max / (N_sma_max - 2)) /
                  (1 - std::pow(beta1, step));
    else if (degenerated_to_sgd)
      step_size = 1.0 / (1 - std::pow(beta1, step));
    else
      step_size = -1;
    if (N_sma >= 5) {
      rectified_steps++;
      for (size_t i = 0; i < p.size(); ++i) {
        if (weight_decay != 0) p[i] += -weight_decay * lr * p[i];
        const double denom = std::sqrt(exp_avg_sq[i]) + eps;
        p[i] += -step_size * lr * exp_avg[i] / denom;
      }
    } else if (step_size > 0) {
      sgd_steps++;
      for (size_t i = 0; i < p.size(); ++i) {
        if (weight_decay != 0) p[i] += -weight_decay * lr * p[i];
        p[i] += -step_size * lr * exp_avg[i];
      }
    }
  }
};
}  // namespace

TEST_CASE("radam matches a float64 transcription of the reference over 20 steps") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool degenerated : {true, false}) {
    INFO("degenerated_to_sgd " << degenerated);
    const int64_t n = rng.integer(1, 3000);
    Tensor params = rng.randn({n});
    std::vector<double> ref = to_double(params);
    const std::vector<double> before = ref;
    RAdamConfig config;
    config.degenerated_to_sgd = degenerated;
    RAdam opt(n, Device::cpu, config);
    ReferenceRAdam reference;
    reference.degenerated_to_sgd = degenerated;
    for (int t = 0; t < 20; ++t) {
      Tensor grad = rng.randn({n}, rng.uniform(0.01, 2));
      const float lr = float(rng.uniform(1e-3, 5e-2));  // a different rate each step
      opt.step(params, grad, lr);
      reference.update(ref, to_double(grad), lr);
      if (t == 4 && !degenerated) CHECK(rel_error(params, before) == 0);  // untouched while N_sma < 5
    }
    // beta2 = 0.999: N_sma < 5 for steps 1..5, so the first five are the fallback.
    CHECK(reference.rectified_steps == 15);
    CHECK(reference.sgd_steps == (degenerated ? 5 : 0));
    CHECK(opt.step_count() == 20);
    CHECK(rel_error(params, ref) < 1e-6);
    auto state = opt.state();
    CHECK(rel_error(state.at("exp_avg"), reference.exp_avg) < 1e-6);
    CHECK(rel_error(state.at("exp_avg_sq"), reference.exp_avg_sq) < 1e-6);
  }
}

TEST_CASE("radam resumes from saved state and step count") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = rng.integer(1, 500);
  std::vector<Tensor> grads;
  for (int t = 0; t < 12; ++t) grads.push_back(rng.randn({n}));
  Tensor straight = rng.randn({n}), resumed = straight.clone();
  RAdam a(n, Device::cpu);
  for (int t = 0; t < 12; ++t) a.step(straight, grads[t], 1e-2f);

  RAdam first(n, Device::cpu);
  for (int t = 0; t < 4; ++t) first.step(resumed, grads[t], 1e-2f);
  RAdam second(n, Device::cpu);  // a fresh optimizer loaded from the first's checkpoint
  for (auto& [name, tensor] : second.state()) tensor.copy_from(first.state().at(name));
  second.set_step_count(first.step_count());
  for (int t = 4; t < 12; ++t) second.step(resumed, grads[t], 1e-2f);
  CHECK(rel_error(resumed, straight) == 0);
}

TEST_CASE("optimizers reject mismatched tensors and unknown names") {
  auto opt = make_optimizer("radam", 10, Device::cpu);
  CHECK(std::string(opt->name()) == "radam");
  CHECK(std::string(make_optimizer("adam", 10, Device::cpu)->name()) == "adam");
  Tensor params = Tensor::zeros({10}), grad = Tensor::zeros({9});
  CHECK_THROWS_WITH_AS(opt->step(params, grad, 1e-3f), doctest::Contains("radam step grad: expected shape [10], got [9]"),
                       lt::Error);
  CHECK_THROWS_WITH_AS(make_optimizer("sgd", 10, Device::cpu), doctest::Contains("unknown optimizer 'sgd'"), lt::Error);
}
