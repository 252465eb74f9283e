#include "model/parameters.h"

namespace lt {

size_t Parameters::add(const std::string& name, const Shape& shape) {
  check(!allocated(), "parameter '" + name + "' declared after allocation");
  check(!has(name), "parameter '" + name + "' declared twice");
  // Offsets rounded to 16 floats keep every view 64-byte aligned for SIMD.
  entries_.push_back({name, shape, total_});
  total_ += (shape_numel(shape) + 15) / 16 * 16;
  index_[name] = entries_.size() - 1;
  return entries_.size() - 1;
}

void Parameters::allocate(Device device) { values_ = Tensor::zeros({total_}, device); }

const Tensor& Parameters::grads() const {
  check(allocated(), "Parameters::grads: the parameters are not allocated");
  if (!grads_.defined() || grads_.device() != values_.device()) grads_ = Tensor::zeros({total_}, values_.device());
  return grads_;
}

void Parameters::zero_grad() {
  grads();
  grads_.zero();
}

void Parameters::share_values(const Parameters& other) {
  check(total_ == other.total_ && entries_.size() == other.entries_.size() && other.allocated(),
        "share_values: the parameter sets differ in layout");
  values_ = other.values_;
}

size_t Parameters::index(const std::string& name) const {
  auto it = index_.find(name);
  check(it != index_.end(), "no parameter named '" + name + "'");
  return it->second;
}

Tensor Parameters::value(size_t i) const {
  const Entry& e = entries_.at(i);
  return values_.rows(e.offset, e.offset + shape_numel(e.shape)).reshape(e.shape);
}

Tensor Parameters::grad(size_t i) const {
  const Entry& e = entries_.at(i);
  return grads().rows(e.offset, e.offset + shape_numel(e.shape)).reshape(e.shape);
}

std::map<std::string, Tensor> Parameters::named_values() const {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < entries_.size(); ++i) out[entries_[i].name] = value(i);
  return out;
}

}  // namespace lt
