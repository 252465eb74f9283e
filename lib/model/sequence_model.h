// One model for every task: an input part, an encoder (the transformer stack,
// or the bidirectional LSTM baseline), a linear predictor and an output head.
// A task (images, the copy task, speech) chooses the parts; parameters,
// initialisation, save and load, training and the recurrent form are written
// once, here.
//
//   tokens ids [B, L] -> value_embedding [V, d/2] | position code [L, d/2]
//   or frames [B, L, F] -> input_projection Linear(F, d/2) | position code
//                     -> TransformerStack -> predictor Linear(d, P) -> head
//   or frames [B, L, F] -> BiLstm (2H wide) -> predictor Linear(2H, P) -> head
//   (mixture of logistics, categorical, or CTC over whole rows)
//
// Tensor names are the reference implementation's (fast-transformers'
// ImageGenerator and SequencePredictor): value_embedding.weight,
// transformer.layers.{i}...., predictor.weight, predictor.bias; a BiLstm's
// are torch.nn.LSTM's under lstm. (model/bilstm.h).
//
//   auto model = lt::SequenceModel::load(lt::load_safetensors(path), lt::Device::cpu);
//   lt::ForwardPass pass;  // the caller's: what the forward leaves for its backward
//   double loss = model->forward(batch, {.train = true, .seed = s}, pass);
//   model->backward(pass);
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "heads/ctc.h"
#include "heads/heads.h"
#include "io/safetensors.h"
#include "model/bilstm.h"
#include "model/parameters.h"
#include "model/transformer.h"

namespace lt {

class InputPart;  // model/input_part.h

// The body between input part and predictor, as checkpoints name it in
// their "encoder" metadata (absent: transformer).
enum class EncoderKind { transformer, bilstm };
const char* encoder_kind_name(EncoderKind k);  // "transformer" | "bilstm"
EncoderKind parse_encoder_kind(const std::string& s);

struct SequenceModelConfig {
  std::string family = "image";  // what the checkpoint's lt.model says: image, copy, speech
  int64_t vocabulary = 256;      // input token ids 0..vocabulary-1
  int64_t input_features = 0;    // > 0: inputs are frames of this many floats (speech), not tokens
  int64_t max_positions = 783;   // the longest input (tokens: the position code table's length)
  EncoderKind encoder = EncoderKind::transformer;
  TransformerConfig transformer;  // encoder transformer
  LstmConfig lstm;                // encoder bilstm: over feature frames as they are (no projection)
  OutputHead head;
  // What the family adds to the checkpoint's metadata (an image's size and
  // first subpixel's histogram), saved with the model's own entries, which
  // take precedence.
  std::map<std::string, std::string> family_metadata;
  // Throws lt::Error naming the inconsistent sizes.
  void validate() const;
  int64_t width() const;  // of the encoder's outputs: d_model, or 2 x hidden
  // "bilstm", or the transformer's attention (attention_name).
  std::string encoder_name() const;
  // "9 layers, d 192, 6 heads, linear" or "bilstm, 3 layers, hidden 320 per direction".
  std::string describe_encoder() const;
  // A causal linear transformer: a recurrent form with a state of fixed size (streaming).
  bool runs_as_rnn() const;
};

// A batch of sequences on the host; the model copies it to its device.
struct SequenceBatch {
  int64_t rows = 0, length = 0;
  std::vector<int32_t> inputs, targets;  // [rows, length]; a CTC model has no targets here
  std::vector<float> features;           // feature models: [rows, length, input_features] instead of inputs
  CtcTargets labels;                     // CTC models: each row's label sequence
  // Per row, the positions first[r] .. last[r]-1 that the loss counts; empty:
  // every real position.
  std::vector<int64_t> first, last;
  // Per row, its real length: positions from lengths[r] on are padding, which
  // no real position sees (TransformerStack::forward). Empty: all length.
  std::vector<int32_t> lengths;
  // Rows begin .. end-1 as a batch of their own.
  SequenceBatch slice(int64_t begin, int64_t end) const;
};

class SequenceModel;

// What a SequenceModel's forward leaves for its backward, as PyTorch's ctx
// and llm.c's activation struct hand it over: owned by the caller, filled by
// forward, read by backward. The model keeps nothing of a pass, so passes are
// independent: a predict(), or a forward into another pass, between a
// forward and its backward changes nothing. A pass's buffers grow to the
// largest batch it has held and are reused by the next forward into it, so
// a training loop that keeps its pass allocates nothing per step.
class ForwardPass {
 public:
  ForwardPass();
  ~ForwardPass();
  ForwardPass(ForwardPass&&) noexcept;
  ForwardPass& operator=(ForwardPass&&) noexcept;
  // What its forward's loss counted (OutputHead::counted); 0 before one.
  int64_t counted() const;
  // Its forward's head outputs [rows, length, head width], on the model's device.
  Tensor heads() const;

 private:
  friend class SequenceModel;
  struct Buffers;
  std::unique_ptr<Buffers> buf_;
};

class SequenceModel {
 public:
  SequenceModel(const SequenceModelConfig& config, Device device);
  ~SequenceModel();
  // Config from the tensor shapes (layers, widths, vocabulary, head width)
  // and the metadata (heads, attention, direction, feature map, head kind,
  // max_positions); a checkpoint without lt.model is the reference's image
  // model. Errors name the file and the tensor or key.
  // max_positions: what the family derives from its own metadata (an
  // image's size), or 0 to read the metadata key max_positions;
  // family_metadata: what the family read from it (config().family_metadata).
  static std::unique_ptr<SequenceModel> load(const Checkpoint& checkpoint, Device device,
                                             int64_t max_positions = 0,
                                             const std::map<std::string, std::string>& family_metadata = {});
  // The tensors plus metadata() and extra entries and tensors (a trainer's
  // "optimizer.*", which load() skips), written atomically.
  void save(const std::string& path, const std::map<std::string, std::string>& extra = {},
            const std::map<std::string, Tensor>& extra_tensors = {}) const;
  std::map<std::string, std::string> metadata() const;

  const SequenceModelConfig& config() const { return config_; }
  void set_dropout(float p);  // for later training steps, and saved with the model
  // Frees every buffer a forward or step planned (Encoder::release_buffers).
  void release_buffers();
  Parameters& params() { return params_; }
  const Parameters& params() const { return params_; }
  Device device() const { return device_; }
  // torch's defaults: the stack's Linear and LayerNorm inits, the embedding
  // N(0, 1), the predictor U(-1/sqrt(d), 1/sqrt(d)); the feature maps drawn from seed.
  void init_parameters(uint64_t seed);
  // The feature maps' own tensors (FAVOR+'s projections), saved and loaded
  // with the parameters but not trained; redrawn on request (training may
  // redraw them every few steps, as the Performer does).
  std::map<std::string, Tensor> feature_tensors() const { return encoder_->feature_tensors(); }
  void redraw_feature_maps(uint64_t seed) { encoder_->redraw_feature_maps(seed); }
  // Takes other's feature-map draws (a replica of the same config).
  void copy_feature_maps(const SequenceModel& other);

  // ---- training and evaluation ----
  // Mean negative log-likelihood in nats over what the head counts
  // (OutputHead::loss_forward): the counted positions, or a CTC model's
  // labels. nll, if given, receives one value per counted position
  // (row-major), or per row for CTC; accuracy, if given, the fraction of
  // counted positions whose most likely class is the target (CTC: -1).
  // Everything backward needs goes into pass (its count and head outputs
  // are readable there); a pass another model filled is planned anew.
  double forward(const SequenceBatch& batch, const ForwardOptions& options, ForwardPass& pass,
                 Tensor* nll = nullptr, double* accuracy = nullptr);
  // The loss alone (evaluation, a gradient check's probe): the same pass in
  // the model's own buffers, which no backward reads.
  double forward(const SequenceBatch& batch, const ForwardOptions& options, Tensor* nll = nullptr,
                 double* accuracy = nullptr);
  // The head outputs [rows, length, head width] of a batch that needs no
  // targets or labels (recognition): the forward pass in eval mode without a
  // loss, in the model's own buffers (valid until its next predict or
  // loss-only forward).
  Tensor predict(const SequenceBatch& batch, const ForwardOptions& options);
  // Gradients of the loss of the forward that filled pass, accumulated into
  // params().grads(): its summed nats over `normalizer` counted positions,
  // by default its own count (the mean). A part of a larger batch passes the
  // whole batch's count, so that the parts' gradients add up to the batch's.
  void backward(ForwardPass& pass, int64_t normalizer = 0);
  // What a forward of batch would count.
  int64_t counted(const SequenceBatch& batch) const;

  // ---- generation: the recurrent form ----
  // A transformer's only: a bilstm model refuses every call here with one
  // lt::Error line (its backward direction starts at the end of the input).
  // A state for batch rows at every position of the model (max_positions);
  // zeroed false: see TransformerStack::new_state.
  RecurrentState new_state(int64_t batch, DType dtype = DType::f32, bool zeroed = true) const;
  // The precision of step() and prefill(): products of the stack (packs the
  // weights now, see TransformerStack::prepare_step) and of the head. Call
  // again after changing the weights. pack_weights: see TransformerStack::prepare_step.
  void prepare_step(const Precision& precision, bool pack_weights = true);
  int64_t state_numel(int64_t batch, DType dtype) const;
  // Reads inputs at the state's position t (tokens int32 [B], or frames
  // float [B, F]) and writes head [B, head width]: the distribution of
  // position t's target; the state moves to t + 1. Allocation-free after the
  // first call with a given B.
  void step(RecurrentState& state, const Tensor& inputs, Tensor& head);
  // One step of B sequences that live in rows rows[0..B-1] of a larger state
  // (model/state_pool.h), each at its own position positions[b]: inputs [B] or
  // [B, F] -> head [B, head width], on the model's device. The state's
  // position is not used or moved. A causal linear transformer (TransformerStack::step_rows).
  // slot: threads stepping slices of one pool at once pass their own
  // (0..kStepSlots-1), after prepare_step.
  void step_rows(RecurrentState& state, const int64_t* rows, const int64_t* positions, const Tensor& inputs,
                 Tensor& head, int slot = 0);
  // step_rows' buffers of slots 0..slots-1 for up to `rows` rows, made now,
  // on one thread: a pool's threads then step slices of any size up to it
  // without allocating, whichever slice each takes.
  void reserve_step_rows(int slots, int64_t rows);
  void reset_state_element(RecurrentState& state, int64_t row) const;
  // Continues state (positions 0..t0-1, t0 its position) over inputs (tokens
  // int32 [B, T] or frames float [B, T, F]) at positions t0..t0+T-1 in one
  // parallel pass: heads [B, T, head width], one per position, and the state
  // after them (TransformerStack::continue_chunk).
  void continue_chunk(RecurrentState& state, const Tensor& inputs, Tensor& heads);
  // continue_chunk from the empty prefix, keeping the last head [B, head width].
  void prefill(const Tensor& inputs, RecurrentState& state, Tensor& head);
  void copy_state_element(const RecurrentState& from, int64_t src, RecurrentState& to, int64_t dst) const;

 private:
  struct Buffers;
  // The batch's inputs through input part, encoder and predictor into pass:
  // the head outputs [B, L, P].
  Tensor run(const SequenceBatch& batch, const ForwardOptions& options, ForwardPass& pass);
  TransformerStack& recurrent_form(const char* what) const;
  void predict_step(const Tensor& y, Tensor& head, Tensor* scratch = nullptr);  // the head of a step's outputs (scratch: PackedLinear's)

  SequenceModelConfig config_;
  Device device_;
  Parameters params_;
  std::unique_ptr<Encoder> encoder_;
  TransformerStack* stack_ = nullptr;  // the encoder if it is the transformer stack (the recurrent form's)
  std::unique_ptr<InputPart> input_;
  size_t predictor_w_, predictor_b_;
  Precision step_precision_;
  std::unique_ptr<Buffers> buf_;  // scratch of one call and of the recurrent form: no pass's state
  ForwardPass own_pass_;          // predict's and the loss-only forward's, which no backward reads
};

}  // namespace lt
