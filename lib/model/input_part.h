// The input part of a SequenceModel: what turns a task's inputs into the
// stack's [B, T, d_model]. Tokens: a value embedding beside the sinusoidal
// position code (the reference's ImageGenerator and SequencePredictor);
// features (speech's filterbank frames): a linear projection beside it, or
// the frames as they are (the Bi-LSTM baseline's input).
#pragma once
#include <cstdint>
#include <memory>
#include <random>

#include "core/tensor.h"
#include "model/parameters.h"
#include "model/step_linear.h"
#include "model/transformer.h"

namespace lt {

class InputPart {
 public:
  virtual ~InputPart() = default;
  // x [B, T, d] from inputs [B, T] (or [B]: one position) at positions
  // offset..offset+T-1; feature inputs carry a last axis of features.
  // Allocation-free after the largest shape.
  virtual void forward(const Tensor& inputs, int64_t offset, Tensor& x) = 0;
  // One position per row, each at its own: x [B, 1, d] from inputs [B] (or
  // [B, features]), row b at positions[b] (a state pool's rows). A row's
  // result does not depend on the others. Allocation-free after the largest
  // B. slot (0..kStepSlots-1) picks the buffers: threads stepping slices of
  // a pool at once each pass their own, after prepare_step.
  virtual void forward_at(const Tensor& inputs, const int64_t* positions, Tensor& x, int slot) = 0;
  // forward_at's buffers of slots 0..slots-1 for up to `rows` rows, made now.
  virtual void reserve_at(int slots, int64_t rows) = 0;
  // What forward_at needs made once: its products at the recurrent step's
  // precision, packed when pack (the weights as they are now; call again
  // after they change), and any table.
  virtual void prepare_step(bool /*pack*/) {}
  // dx [B, T, d] of a forward over the same inputs: parameter gradients accumulate.
  virtual void backward(const Tensor& inputs, const Tensor& dx) = 0;
  // torch's defaults, drawn from gen in a fixed order.
  virtual void init_parameters(std::mt19937_64& gen) const = 0;
  virtual int64_t width() const = 0;  // d of its outputs
};

// Token ids 0..vocabulary-1 -> value_embedding.weight [vocabulary, d/2] | the
// position code of max_positions x d/2. Declares its tensor in params (which
// must not be allocated yet); it lives on params' device once allocated.
std::unique_ptr<InputPart> make_token_input(Parameters& params, int64_t vocabulary, int64_t d_model,
                                            int64_t max_positions);

// Feature frames [.., features] -> input_projection (Linear(features, d/2)) |
// the position code of the frame's position, computed on the fly (any length).
std::unique_ptr<InputPart> make_feature_input(Parameters& params, int64_t features, int64_t d_model);

// Feature frames [.., features] as they are: no tensors (an encoder reading
// frames itself, the BiLstm).
std::unique_ptr<InputPart> make_frame_input(int64_t features);

}  // namespace lt
