// Optimizer base: the moment buffers and step count that every Adam-family
// optimizer keeps, exposed for checkpoints; and the by-name factory.
#include <string>

#include "optim/optimizer.h"

namespace lt {

Optimizer::Optimizer(int64_t numel, Device device)
    : exp_avg_(Tensor::zeros({numel}, device)), exp_avg_sq_(Tensor::zeros({numel}, device)) {}

void Optimizer::set_step_count(int64_t step) {
  check(step >= 0, std::string(name()) + ": step count must be >= 0, got " + std::to_string(step));
  step_ = step;
}

std::map<std::string, Tensor> Optimizer::state() const {
  return {{"exp_avg", exp_avg_}, {"exp_avg_sq", exp_avg_sq_}};
}

void Optimizer::check_step_args(const Tensor& params, const Tensor& grad, const char* what) const {
  check_shape(params, exp_avg_.shape(), (std::string(what) + " params").c_str());
  check_shape(grad, exp_avg_.shape(), (std::string(what) + " grad").c_str());
  check(params.device() == exp_avg_.device() && grad.device() == exp_avg_.device(),
        std::string(what) + ": params and grad must be on " + device_name(exp_avg_.device()) +
            ", where the optimizer state lives");
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, int64_t numel, Device device) {
  if (name == "radam") return std::make_unique<RAdam>(numel, device);
  if (name == "adam") return std::make_unique<Adam>(numel, device);
  throw Error("unknown optimizer '" + name + "' (expected radam or adam)");
}

}  // namespace lt
