// Feature maps phi of linear attention (eq. 4-7) behind one interface, so that
// a map with tensors of its own (FAVOR+'s random projection) plugs in without
// touching the attention code. The attention ops take phi(q) and phi(k) of
// width F = feature_dim(E); the recurrent state is S [N, H, F, M], Z [N, H, F].
//
//   FeatureMapOptions o;
//   o.head_dim = 32;                       // E
//   o.seed = 7;                            // favor's first draw
//   auto phi = make_feature_map("favor", o);
//   Tensor fq = Tensor::empty({N, L, H, phi->feature_dim(32)});
//   phi->forward(q, fq);                   // q [N, L, H, 32]
//   for (auto& [name, t] : phi->tensors()) save(prefix + name, t);  // "omega"
//
// A model holds one map per layer (each layer its own draw: seed it from the
// model's seed and the layer index) and stores the maps' tensors beside its
// parameters, not among them (they get no gradients), under
// {prefix}layers.{i}.attention.inner_attention.feature_map.{name}: the keys
// of fast-transformers' state_dict, whose Favor buffer is this omega [E, F/2].
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "backend/device.h"
#include "common/constants.h"  // Elementwise
#include "core/tensor.h"

namespace lt {

struct FeatureMapOptions {
  int64_t head_dim = 0;         // E; maps with a projection need it (elementwise maps accept any)
  int64_t features = 0;         // F of a random-feature map (favor: even); 0 takes the map's default
  uint64_t seed = 0;            // the first draw of a random map
  Device device = Device::cpu;  // where the map's tensors live (its inputs must live there too)
};

class FeatureMap {
 public:
  virtual ~FeatureMap() = default;
  virtual std::string name() const = 0;
  // F, the width of phi(x) for inputs of head dimension E (E for elementwise
  // maps). A map drawn for one E throws lt::Error for another.
  virtual int64_t feature_dim(int64_t head_dim) const = 0;
  // Elementwise::none unless phi applies one scalar function to each entry.
  virtual Elementwise elementwise() const { return Elementwise::none; }
  // y [..., F] = phi(x [..., E]).
  virtual void forward(const Tensor& x, Tensor& y) const = 0;
  // dx [..., E] = (dphi/dx)^T dy, given the forward input x (overwritten, as ops.h).
  virtual void backward(const Tensor& x, const Tensor& dy, Tensor& dx) const = 0;
  // The map's own tensors by name relative to the map ("omega" for favor),
  // aliasing its storage: a model saves them under its prefix and loads a
  // checkpoint by copy_from into them. They are not trained (no gradients).
  virtual std::map<std::string, Tensor> tensors() const { return {}; }
  // Draws the map's random tensors anew from seed, in place (the views of
  // tensors() stay valid); nothing for maps without any. A recurrent state
  // built with the old draw is meaningless under the new one.
  virtual void redraw(uint64_t seed) { (void)seed; }
};

// By name: "elu" (elu(x) + 1, the paper's default), "relu", or "favor"
// (FAVOR+, Performer positive orthogonal random features; needs head_dim).
// Throws lt::Error for an unknown name (listing the known ones) or options
// the map cannot honour.
std::unique_ptr<FeatureMap> make_feature_map(const std::string& name, const FeatureMapOptions& options = {});

}  // namespace lt
