// Elementwise feature maps (phi of eq. 4-7). They keep the head dimension, so
// feature_dim(E) = E; maps that change the width (FAVOR+) derive from
// FeatureMap on their own and the attention code reads the width from phi(q).
#include "lt/feature_map.h"

#include <utility>

#include "lt/ops.h"

namespace lt {
namespace {

using Elementwise = void (*)(const Tensor&, Tensor&);
using ElementwiseGrad = void (*)(const Tensor&, const Tensor&, Tensor&);

class ElementwiseFeatureMap final : public FeatureMap {
 public:
  ElementwiseFeatureMap(std::string name, Elementwise fwd, ElementwiseGrad bwd)
      : name_(std::move(name)), fwd_(fwd), bwd_(bwd) {}

  std::string name() const override { return name_; }
  int64_t feature_dim(int64_t head_dim) const override { return head_dim; }

  void forward(const Tensor& x, Tensor& y) const override {
    check_shape(y, x.shape(), ("feature map " + name_ + " output").c_str());
    fwd_(x, y);
  }
  void backward(const Tensor& x, const Tensor& dy, Tensor& dx) const override {
    check_shape(dy, x.shape(), ("feature map " + name_ + " dy").c_str());
    check_shape(dx, x.shape(), ("feature map " + name_ + " dx").c_str());
    bwd_(x, dy, dx);
  }

 private:
  std::string name_;
  Elementwise fwd_;
  ElementwiseGrad bwd_;
};

}  // namespace

std::unique_ptr<FeatureMap> make_feature_map(const std::string& name) {
  // eq. 7: elu(x) + 1 keeps phi positive (the normaliser of eq. 4 never vanishes)
  // and its gradient non-zero for negative inputs, unlike relu.
  if (name == "elu") return std::make_unique<ElementwiseFeatureMap>(name, elu_plus_one_forward, elu_plus_one_backward);
  if (name == "relu") return std::make_unique<ElementwiseFeatureMap>(name, relu_forward, relu_backward);
  throw Error("unknown feature map '" + name + "' (known: elu, relu)");
}

}  // namespace lt
