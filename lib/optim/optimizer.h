// Optimizers over ONE flat parameter tensor and ONE flat gradient tensor (a
// model keeps all its parameters in a single buffer, as llm.c), gradient
// clipping, and learning-rate schedules.
//
//   auto opt = make_optimizer("radam", params.numel(), params.device());
//   for (int64_t t = 0; t < steps; ++t) {
//     ... forward, backward into grad ...
//     clip_grad_norm_segments(grad, parameter_sizes, 1.f);  // what the reference's RAdam does
//     opt->step(params, grad, learning_rate(schedule, t));
//   }
//   save(opt->state(), opt->step_count());  // load: copy_from into state(), set_step_count
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace lt {

// ---- Optimizers ------------------------------------------------------------------
// Base: owns the first and second moment buffers (exp_avg, exp_avg_sq; zero at
// start) and the step count, on the parameters' device.
class Optimizer {
 public:
  Optimizer(int64_t numel, Device device);
  virtual ~Optimizer() = default;
  virtual const char* name() const = 0;
  // One update of params [numel] from grad [numel] at learning rate lr; the
  // step count is advanced first (the first update is step 1, as torch).
  virtual void step(Tensor& params, const Tensor& grad, float lr) = 0;

  int64_t step_count() const { return step_; }
  void set_step_count(int64_t step);
  // "exp_avg" and "exp_avg_sq", aliasing the optimizer's own buffers: save
  // them as they are; restore with copy_from into them (and set_step_count).
  std::map<std::string, Tensor> state() const;

 protected:
  // Throws unless params and grad are flat f32 [numel] tensors on the state's device.
  void check_step_args(const Tensor& params, const Tensor& grad, const char* what) const;
  Tensor exp_avg_, exp_avg_sq_;
  int64_t step_ = 0;
};

// torch.optim.Adam; weight_decay is its L2 term (added to the gradient).
// Hyperparameters are doubles like the reference's Python floats: the bias
// corrections and RAdam's N_sma are computed from them in double.
struct AdamConfig {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
};

class Adam final : public Optimizer {
 public:
  Adam(int64_t numel, Device device, AdamConfig config = {});
  const char* name() const override { return "adam"; }
  void step(Tensor& params, const Tensor& grad, float lr) override;
  const AdamConfig& config() const { return config_; }

 private:
  AdamConfig config_;
};

// Rectified Adam (Liu et al. 2020) exactly as the reference's radam.py, with
// the reference's weight decay 0.01 (decoupled: p -= lr * wd * p, in both
// branches). Its rectification term needs N_sma >= 5, i.e. from step 6 on with
// beta2 = 0.999; before that it falls back to SGD with momentum,
// p -= lr * exp_avg / (1 - beta1^t) (degenerated_to_sgd), or leaves p alone.
// The reference's RAdam also clips every parameter's gradient to norm 1
// before its update: call clip_grad_norm_segments first to reproduce that.
struct RAdamConfig {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
  bool degenerated_to_sgd = true;
};

class RAdam final : public Optimizer {
 public:
  RAdam(int64_t numel, Device device, RAdamConfig config = {});
  const char* name() const override { return "radam"; }
  void step(Tensor& params, const Tensor& grad, float lr) override;
  const RAdamConfig& config() const { return config_; }

 private:
  RAdamConfig config_;
};

// "radam" or "adam" with the reference's settings (utils.py get_optimizer:
// RAdam with weight decay 0.01, plain Adam); throws lt::Error otherwise.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, int64_t numel, Device device);

// ---- Gradient clipping (torch.nn.utils.clip_grad_norm_) ---------------------------
// norm = ||grad||_2 (accumulated in double); if max_norm / (norm + 1e-6) < 1,
// grad is scaled by that factor. Returns the norm before clipping.
double clip_grad_norm(Tensor& grad, float max_norm);
// The same for each consecutive segment of the flat gradient on its own
// (segment_sizes sum to grad.numel(), one per parameter tensor); returns each
// segment's norm before clipping.
std::vector<double> clip_grad_norm_segments(Tensor& grad, const std::vector<int64_t>& segment_sizes,
                                            float max_norm);

// ---- Learning-rate schedules --------------------------------------------------------
enum class ScheduleKind { constant, step_decay, cosine };

struct Schedule {
  ScheduleKind kind = ScheduleKind::constant;
  float lr = 1e-4f;                 // base learning rate
  int64_t warmup_steps = 0;         // any kind: linear ramp lr * (t + 1) / warmup_steps first
  std::vector<int64_t> milestones;  // step_decay: lr is multiplied by gamma from each of these steps on
  float gamma = 0.1f;
  int64_t total_steps = 0;  // cosine: decays from lr after warmup to min_lr at total_steps
  float min_lr = 0.f;
};

// Learning rate of update t (0-based: t updates have been done before it).
// E.g. the copy task: {step_decay, 1e-4, 0, {3000}, 0.1} divides by 10 from update 3000 on.
float learning_rate(const Schedule& schedule, int64_t step);
// "constant", "step" or "cosine"; throws lt::Error otherwise.
ScheduleKind parse_schedule_kind(const std::string& name);

}  // namespace lt
