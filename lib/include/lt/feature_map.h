// Feature maps phi of linear attention behind one interface, so that maps with
// their own parameters or state (FAVOR+ random features with a stored
// projection) plug in without touching the attention code.
#pragma once
#include <memory>
#include <string>

#include "lt/tensor.h"

namespace lt {

class FeatureMap {
 public:
  virtual ~FeatureMap() = default;
  virtual std::string name() const = 0;
  // Width of phi(x) for inputs of head dimension E (E for elementwise maps).
  virtual int64_t feature_dim(int64_t head_dim) const = 0;
  // y [..., feature_dim(E)] = phi(x [..., E]).
  virtual void forward(const Tensor& x, Tensor& y) const = 0;
  // dx = dphi/dx^T dy, given the forward input x.
  virtual void backward(const Tensor& x, const Tensor& dy, Tensor& dx) const = 0;
};

// "elu" (elu(x) + 1, the paper's default) or "relu"; throws lt::Error otherwise.
std::unique_ptr<FeatureMap> make_feature_map(const std::string& name);

}  // namespace lt
