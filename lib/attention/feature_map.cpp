// The elementwise feature maps (phi of eq. 7) and the registry of every map by
// name. Elementwise maps keep the head dimension (F = E) and tell the fused
// recurrent step which function they are, so it applies them as it reads q and k.
#include "attention/feature_map.h"

#include <utility>

#include "ops/ops.h"

namespace lt {

// Each map's file defines its maker; adding a map is a declaration here and
// its line in kMaps.
std::unique_ptr<FeatureMap> make_favor_feature_map(const FeatureMapOptions& options);  // favor_feature_map.cpp

namespace {

using Apply = void (*)(const Tensor&, Tensor&);
using ApplyGrad = void (*)(const Tensor&, const Tensor&, Tensor&);

class ElementwiseFeatureMap final : public FeatureMap {
 public:
  ElementwiseFeatureMap(std::string name, Elementwise kind, Apply fwd, ApplyGrad bwd)
      : name_(std::move(name)), kind_(kind), fwd_(fwd), bwd_(bwd) {}

  std::string name() const override { return name_; }
  int64_t feature_dim(int64_t head_dim) const override { return head_dim; }
  Elementwise elementwise() const override { return kind_; }

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
  Elementwise kind_;
  Apply fwd_;
  ApplyGrad bwd_;
};

// An elementwise map has F = E: a different F asked for is a mistake, not a default.
void check_no_width(const std::string& name, const FeatureMapOptions& o) {
  if (o.features != 0 && o.features != o.head_dim)
    throw Error("feature map " + name + " keeps the head dimension; it cannot give " + std::to_string(o.features) +
                " features");
}

// eq. 7: elu(x) + 1 keeps phi positive (the normaliser of eq. 4 never vanishes)
// and its gradient non-zero for negative inputs, unlike relu.
std::unique_ptr<FeatureMap> make_elu(const FeatureMapOptions& o) {
  check_no_width("elu", o);
  return std::make_unique<ElementwiseFeatureMap>("elu", Elementwise::elu_plus_one, elu_plus_one_forward,
                                                 elu_plus_one_backward);
}
std::unique_ptr<FeatureMap> make_relu(const FeatureMapOptions& o) {
  check_no_width("relu", o);
  return std::make_unique<ElementwiseFeatureMap>("relu", Elementwise::relu, relu_forward, relu_backward);
}

struct Registered {
  const char* name;
  std::unique_ptr<FeatureMap> (*make)(const FeatureMapOptions&);
};
const Registered kMaps[] = {
    {"elu", make_elu},
    {"relu", make_relu},
    {"favor", make_favor_feature_map},
};

}  // namespace

std::unique_ptr<FeatureMap> make_feature_map(const std::string& name, const FeatureMapOptions& options) {
  std::string known;
  for (const Registered& r : kMaps) {
    if (name == r.name) return r.make(options);
    known += (known.empty() ? "" : ", ") + std::string(r.name);
  }
  throw Error("unknown feature map '" + name + "' (known: " + known + ")");
}

}  // namespace lt
