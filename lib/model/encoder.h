// The body of a SequenceModel, between its input part and its predictor:
// [B, L, input width] -> [B, L, output width] over whole padded batches, with
// explicit forward and backward passes. Two bodies: the transformer stack
// (model/transformer.h, the paper's models) and the bidirectional LSTM
// (model/bilstm.h, the paper's Table 3 baseline). Only the transformer stack has
// a recurrent form; SequenceModel reaches it through that class.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/precision.h"
#include "core/tensor.h"

namespace lt {

// How one forward pass runs.
struct ForwardOptions {
  bool train = false;   // dropout on (at the config's rate)
  uint64_t seed = 0;    // the dropout masks and LSH rotations derive from it
  Precision precision;  // the stack's products (precision.products) and a model's head (precision.head)
  // The row of the step's whole batch that this batch's first row is: a
  // batch split over threads, processes or micro-batches draws each row's
  // dropout masks from (seed, its row), so the split changes nothing.
  int64_t first_row = 0;
};

// What one forward pass leaves for its backward, as PyTorch's ctx and llm.c's
// activation struct hand it over: made by the encoder (new_pass), owned by the
// caller, filled by forward and read by backward. Nothing of a pass lives in
// the encoder, so passes are independent: a forward into one (a prediction,
// another batch) leaves another's backward as it was. A pass's buffers are
// planned for the largest (B, L) it has held and reused by the next forward
// into it, so a loop that keeps its pass allocates nothing.
class EncoderPass {
 public:
  virtual ~EncoderPass() = default;
};

class Encoder {
 public:
  virtual ~Encoder() = default;
  // An empty pass of this encoder (its buffers come with its first forward).
  virtual std::unique_ptr<EncoderPass> new_pass() const = 0;
  // x [B, L, input width], y [B, L, output width]; lengths int32 [B] (any
  // device) or undefined for all L: positions l >= lengths[b] are padding,
  // which no real position sees; their outputs are zeros and their input
  // gradients too. Saves what backward needs in pass (one of this encoder's).
  virtual void forward(const Tensor& x, const Tensor& lengths, Tensor& y, const ForwardOptions& options,
                       EncoderPass& pass) = 0;
  // dy [B, L, output width] -> dx [B, L, input width] of the forward that
  // filled pass; parameter gradients accumulate in the Parameters the
  // encoder declared its tensors in. The pass is left as it was.
  virtual void backward(const EncoderPass& pass, const Tensor& dy, Tensor& dx) = 0;
  // torch's default initialisation of the encoder's tensors, drawn from seed.
  virtual void init_parameters(uint64_t seed) = 0;
  // The dropout of later training forwards (a resumed run may change it).
  virtual void set_dropout(float p) = 0;
  // Tensors saved and loaded with the parameters but not trained (FAVOR+'s
  // projections), aliasing the encoder's; redrawn on request.
  virtual std::map<std::string, Tensor> feature_tensors() const { return {}; }
  virtual void redraw_feature_maps(uint64_t /*seed*/) {}
  // Frees the encoder's own scratch, which the next pass plans again for
  // its shape (after running out of memory on a larger one); passes free
  // their buffers with themselves.
  virtual void release_buffers() = 0;
};

}  // namespace lt
