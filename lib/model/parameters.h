// Parameters: every weight of a model in ONE contiguous buffer, with a same-
// shaped gradient buffer (llm.c style), so the optimizer and gradient
// clipping are single passes and checkpoints are a list of named views.
// Names follow the reference implementation's state_dict keys.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"

namespace lt {

class Parameters {
 public:
  // Declares a parameter; valid only before allocate(). Returns its index.
  size_t add(const std::string& name, const Shape& shape);
  // Allocates the values (zeroed) on the device; views become valid. The
  // gradients, zeroed too, are allocated when first asked for: a model that
  // only infers never holds them (nor pays for their pages at start-up).
  void allocate(Device device);

  bool allocated() const { return values_.defined(); }
  Device device() const { return values_.device(); }
  size_t size() const { return entries_.size(); }
  int64_t numel() const { return total_; }
  const std::string& name(size_t i) const { return entries_.at(i).name; }
  const Shape& shape(size_t i) const { return entries_.at(i).shape; }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  size_t index(const std::string& name) const;

  Tensor value(size_t i) const;
  Tensor grad(size_t i) const;
  Tensor value(const std::string& name) const { return value(index(name)); }
  Tensor grad(const std::string& name) const { return grad(index(name)); }
  // Makes this set use other's values (same layout): a replica that reads the
  // weights the optimizer updates and keeps its own gradients.
  void share_values(const Parameters& other);
  const Tensor& values() const { return values_; }  // flat [numel]
  const Tensor& grads() const;                       // flat [numel]
  void zero_grad();

  // name -> view of the value, for checkpoint writing.
  std::map<std::string, Tensor> named_values() const;

 private:
  struct Entry {
    std::string name;
    Shape shape;
    int64_t offset;
  };
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;
  int64_t total_ = 0;
  Tensor values_;
  mutable Tensor grads_;
};

// Checkpoint averaging (model soups, stochastic weight averaging): sets
// params, loaded from `first`, to the element-wise mean of their values and
// those `others` hold, summed in float64, each checkpoint counting once. The
// others must hold the same model: every parameter with its shape, first's
// value of each `architecture` key but dropout (a training setting), and
// first's other tensors (front-end statistics, feature-map draws; the
// optimizer's aside) bit for bit. Errors name the checkpoint and what differs.
void average_checkpoints(Parameters& params, const Checkpoint& first, const std::vector<Checkpoint>& others,
                         const std::map<std::string, std::string>& architecture);

}  // namespace lt
