// The post-norm transformer encoder stack of the reference implementation
// (fast-transformers' TransformerEncoder), with explicit forward and backward
// passes for training and a recurrent step for generation:
//   x = norm1(x + dropout(out_proj(attention(q_proj x, k_proj x, v_proj x))))
//   x = norm2(x + dropout(linear2(dropout(relu(linear1(x))))))
// followed by a final LayerNorm. Parameter names are the reference's
// state_dict keys: {prefix}layers.{i}.attention.query_projection.weight, ...
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/feature_map.h"
#include "core/tensor.h"
#include "model/encoder.h"
#include "model/parameters.h"
#include "ops/packed_linear.h"

namespace lt {

// lsh: Reformer's LSH attention (attention/attention.h), the paper's baseline: its
// layers have no key projection (keys are the normalised queries) and no
// recurrent form.
enum class AttentionKind { linear, softmax, lsh };
// Causal: position l attends to positions <= l (autoregressive models; the
// recurrent form). Bidirectional: to every position of its sequence (eq. 4-6
// for linear attention; encoders such as speech recognition's).
enum class Direction { causal, bidirectional };
// "causal-linear" (as checkpoints and --attention say), "linear" (bidirectional),
// "softmax" or "lsh" (a config's name, attention_name(config), adds the rounds).
const char* attention_name(AttentionKind k, Direction d = Direction::causal);
// Accepts causal-linear, linear (for either direction), softmax, the
// reference's "full", and lsh-N or causal-lsh-N (N rounds, 1..64).
AttentionKind parse_attention(const std::string& s);
const char* direction_name(Direction d);  // "causal" | "bidirectional"
Direction parse_direction(const std::string& s);

struct TransformerConfig {
  int64_t layers = 8;
  int64_t heads = 8;
  int64_t head_dim = 32;  // E = M, the reference's query/value dimensions
  int64_t d_model = 256;  // must equal heads * head_dim
  int64_t ff_dim = 1024;  // the reference uses 4 * d_model
  AttentionKind attention = AttentionKind::linear;
  Direction direction = Direction::causal;
  std::string feature_map = "elu";  // phi of linear attention: elu, relu or favor (feature_map.h)
  float dropout = 0.1f;
  int64_t features = 0;  // F of a random-feature map (favor); 0: the map's default
  // lsh: hashing rounds, buckets (fewer on short sequences: lsh_bucket_count)
  // and chunk length, as the paper configured Reformer (64 buckets, chunks of 32).
  int64_t lsh_rounds = 1;
  int64_t lsh_buckets = 64;
  int64_t lsh_chunk = 32;
  // Taps of a depthwise convolution over positions inside each feed-forward
  // sub-layer, between linear1 and its ReLU (0: none; at most 31): centred
  // in a bidirectional stack (K odd), over the position and the K - 1 before
  // it in a causal one, whose recurrent state keeps those K - 1 positions.
  // It gives every layer its neighbours, which linear attention's positive
  // weights spread over the whole sequence cannot single out.
  int64_t ff_conv = 0;
  // Sets attention (and lsh_rounds for lsh-N) from a name parse_attention accepts.
  void set_attention(const std::string& name);
  LshOptions lsh_options() const;  // the lsh fields, causal when the stack is
  // Whether step, prefill and continue_chunk exist: causal linear or softmax
  // attention; LSH attention is sampled by recomputing the prefix instead.
  bool has_recurrent_form() const { return attention != AttentionKind::lsh && direction == Direction::causal; }
  // Throws lt::Error naming the inconsistent sizes.
  void validate() const;
  int64_t parameter_count() const;  // values of its Linear and LayerNorm tensors
};

// The attention as checkpoints and --attention name it: attention_name(kind,
// direction), or lsh-N with the rounds.
std::string attention_name(const TransformerConfig& c);

// What a stack keeps in its recurrent state: per layer, S [B, H, F, M] then
// Z [B, H, F] for linear attention (eq. 18-19), or the KV cache
// [B, max_len, H, E] then [B, max_len, H, M] for softmax; then, with
// ff_conv K, the feed-forward convolution's last K - 1 inputs [B, K - 1, ff].
// A stack reads only states of its own layout: another stack's state of the
// same size would be misread.
struct StateLayout {
  int64_t layers = 0, heads = 0, head_dim = 0;
  AttentionKind attention = AttentionKind::linear;
  int64_t features = 0;      // F of linear attention's S and Z (0 for softmax)
  DType dtype = DType::f32;  // of S, which may be bfloat16 (two per float of the buffer); Z and KV caches are float32
  int64_t ff_conv = 0, ff_dim = 0;  // the convolution's taps and width (0, 0 without one)
  bool operator==(const StateLayout& o) const;
  bool operator!=(const StateLayout& o) const { return !(*this == o); }
  // "2 layers of 2 heads x 4, linear attention of 4 features, float32 S, a convolution window of 2 x 16"
  std::string describe() const;
};

// The recurrent state of a stack for one batch, owned by the caller (as
// rwkv.cpp's): one flat buffer that knows its layout and how many positions
// it has consumed. Every batch element is at the same position.
struct RecurrentState {
  Tensor buffer;        // float32 [numel]
  StateLayout layout;   // of the stack that made it
  int64_t batch = 0;    // B
  int64_t max_len = 0;  // positions it can hold (a KV cache's length)
  int64_t position = 0;  // positions consumed: where the next step or chunk reads
  void reset();          // the empty prefix: zeros at position 0
  RecurrentState fork() const;  // an independent copy, at the same position
};

// Sets of step buffers a stack, model and input part keep: threads stepping
// slices of a state pool's rows at once use one each (StatePool::step).
constexpr int kStepSlots = 64;

class TransformerStack final : public Encoder {
 public:
  // Declares the stack's parameters in params under prefix ("transformer.");
  // the feature maps' tensors live on device (params' device once allocated).
  TransformerStack(const TransformerConfig& config, Parameters& params, const std::string& prefix = "transformer.",
                   Device device = Device::cpu);
  ~TransformerStack() override;
  const TransformerConfig& config() const { return config_; }
  // The dropout of later training forwards (a resumed run may change it).
  void set_dropout(float p) override;
  void release_buffers() override;

  // Fills the stack's parameters as torch's defaults do: Linear weights and
  // biases U(-1/sqrt(in), 1/sqrt(in)), LayerNorm ones and zeros; and draws
  // the feature maps' random tensors (layer i from seed and i).
  void init_parameters(uint64_t seed) override;

  // ---- the feature maps' own tensors (FAVOR+'s projection) ----
  // F, the width of phi(q) and phi(k) per head (head_dim for elementwise maps).
  int64_t feature_dim() const { return F_; }
  // Every layer's map tensors, aliasing them, under the reference's names
  // {prefix}layers.{i}.attention.inner_attention.feature_map.{name}: saved
  // beside the parameters, loaded by copy_from, never trained.
  std::map<std::string, Tensor> feature_tensors() const override;
  // Draws every layer's map anew (layer i from seed and i); a recurrent
  // state made before means nothing after.
  void redraw_feature_maps(uint64_t seed) override;

  // ---- training: all positions at once ----
  // A pass holds every layer's activations, a copy of the input, the
  // lengths and the options of its forward: one arena planned for the
  // largest (B, L) it has held.
  std::unique_ptr<EncoderPass> new_pass() const override;
  // x, y [B, L, d_model]; lengths int32 [B] (any device) or undefined for
  // all L: positions l >= lengths[b] are padding. They contribute nothing to
  // any real position's output or gradient, their outputs are zeros and
  // their input gradients too. Saves what backward needs in pass.
  void forward(const Tensor& x, const Tensor& lengths, Tensor& y, const ForwardOptions& options,
               EncoderPass& pass) override;
  // dy [B, L, d] -> dx [B, L, d] of the forward that filled pass; parameter
  // gradients accumulate in params, with that forward's products and dropout.
  void backward(const EncoderPass& pass, const Tensor& dy, Tensor& dx) override;

  // ---- generation: the recurrent form, one position for a batch ----
  // LSH attention has none: new_state, prepare_step and continue_chunk refuse it.
  // Every call taking a state refuses one of another layout (lt::Error
  // naming both) or size.
  int64_t state_numel(int64_t batch, int64_t max_len, DType dtype) const;
  // Its states' layout with S in dtype (a softmax stack's is float32 whatever it asks).
  StateLayout state_layout(DType dtype) const;
  // Zeros (the empty prefix) on the parameters' device. dtype is linear
  // attention's S (Precision::state); a softmax stack's KV cache is float32
  // whatever it asks. zeroed false leaves the memory as allocated, for a
  // caller that resets every element before it steps it (a state pool).
  RecurrentState new_state(int64_t batch, int64_t max_len, DType dtype = DType::f32, bool zeroed = true) const;
  // The state's position for every batch element: x [B, d] -> y [B, d];
  // updates the state and advances its position. Allocation-free after the
  // first call with a given B.
  void step(RecurrentState& state, const Tensor& x, Tensor& y);
  // The same step for B batch elements that live in rows rows[0..B-1] of a
  // larger state (a pool's), updated where they are; every other row is left
  // alone. Linear attention only (its step reads no position); the
  // state's position does not move: a pool keeps each row's. On a GPU a row
  // of -1 pads the batch: it touches no state, and its outputs are not
  // meant to be read. rows null is
  // step() without moving the position. Each row's result is the same
  // whatever the other rows (PackedLinear computes every output row alike).
  // slot (0..kStepSlots-1) picks one set of step buffers: threads that step
  // slices of a pool's rows at once each take their own, after prepare_step.
  void step_rows(RecurrentState& state, const int64_t* rows, const Tensor& x, Tensor& y, int slot = 0);
  // Buffers of slots 0..slots-1 for steps of up to `rows` rows, made now (on
  // one thread): which thread takes which slice of a pool's step varies, and
  // a slot would otherwise grow the first time its thread takes a larger one.
  void reserve_step_rows(int slots, int64_t rows, Device device);
  // Zeros row `row` of every layer's state: that element's empty prefix.
  void reset_state_element(RecurrentState& state, int64_t row) const;
  // Prepares the current weights for step()'s matrix products at this
  // precision (step() does it at its first call, in fp32): q, k and v become
  // one product of 3d outputs, and on an AVX-512 CPU every product is packed
  // (PackedLinear): fp32 is the same arithmetic about 1.7x faster than
  // OpenBLAS at batch 64; bf16 rounds operands to 8 bits for about 3x.
  // Elsewhere OpenBLAS or cuBLAS (fp32 or TF32, bias and ReLU in cuBLASLt's
  // epilogue) multiply the plain matrices. The prepared copy is a snapshot:
  // prepare again after changing the weights. pack_weights false keeps the
  // plain matrices on the CPU too (lt-bench generate --openblas compares;
  // a recognizer, whose chunks multiply the plain matrices, saves the copy).
  void prepare_step(Products products, bool pack_weights = true);
  Products step_products() const { return step_products_; }
  // Continues state, which holds positions 0..t0-1 (t0 its position), over
  // the chunk x [B, T, d] at positions t0..t0+T-1 in one parallel pass (eval
  // mode, the step's products): writes y [B, T, d] and leaves the state at
  // position t0+T, exactly as T steps would. Prefill, completion forks and
  // chunked streaming are this call. (Softmax attention continues a
  // non-empty cache step by step: it has no parallel form over the cache.)
  void continue_chunk(RecurrentState& state, const Tensor& x, Tensor& y);
  // continue_chunk from the empty prefix (the state is reset first).
  void prefill(const Tensor& x, Tensor& y, RecurrentState& state);
  // Copies batch element src of one state into element dst of another of the
  // same layout and max_len, which takes its position (fork a completion:
  // prefill once, sample K times; its other elements follow the same way).
  void copy_state_element(const RecurrentState& from, int64_t src, RecurrentState& to, int64_t dst) const;

 private:
  // Where a layer's tensors are in params_ (kNoTensor: an LSH layer's wk, bk;
  // wc, bc without ff_conv).
  static constexpr size_t kNoTensor = ~size_t(0);
  struct LayerIndices {
    size_t wq, bq, wk, bk, wv, bv, wo, bo, w1, b1, wc, bc, w2, b2, g1, be1, g2, be2;
  };
  struct LayerActs;    // saved activations of one layer
  struct Pass;         // what a forward leaves for its backward (an EncoderPass)
  struct GradBuffers;  // scratch of one forward or backward call, shared by the layers
  struct StepBuffers;  // scratch of step(), planned for one batch size
  struct StepWeights;  // step()'s weights, prepared by prepare_step
  StepBuffers& step_buffers(int slot, int64_t B, Device device);  // slot's, for at least B rows
  Pass& own(EncoderPass& pass) const;  // refuses another encoder's pass
  const Pass& own(const EncoderPass& pass) const;
  void plan(Pass& pass, int64_t B, int64_t L, Device d) const;
  void plan_scratch(int64_t B, int64_t L, Device d);
  void set_lengths(Pass& pass, const Tensor& lengths) const;
  // The parallel pass into pass; with `continuing`, a chunk after the
  // positions that state holds (continue_chunk), whose attention and
  // convolution continue it.
  void run(const Tensor& x, const Tensor& lengths, Tensor& y, const ForwardOptions& options, Pass& pass,
           RecurrentState* continuing);
  void layer_forward(Pass& pass, size_t l, const Tensor& x, RecurrentState* continuing);
  void layer_backward(const Pass& pass, size_t l, const Tensor& x, const Tensor& dy, Tensor& dx);
  void attention_forward(Pass& pass, size_t l, Tensor& att4, RecurrentState* continuing);
  void attention_backward(const Pass& pass, size_t l, const Tensor& datt4, Tensor& dq4, Tensor& dk4, Tensor& dv4);
  void check_recurrent_form() const;
  // Refuses a state of another layout or size; allocation-free when it passes.
  void check_state(const RecurrentState& state) const;
  struct StateViews {
    Tensor a, b;  // S and Z, or K and V caches
    Tensor conv;  // the feed-forward convolution's window [B, K - 1, ff] (undefined without ff_conv)
  };
  StateViews state_views(const RecurrentState& state, size_t l) const;

  TransformerConfig config_;
  Parameters& params_;
  std::vector<LayerIndices> layers_;
  size_t norm_g_, norm_b_;
  std::string prefix_;
  std::vector<std::unique_ptr<FeatureMap>> phis_;  // one per layer, each its own draw
  int64_t F_ = 0;
  Tensor rotations_;  // lsh: [rounds, E, buckets / 2], drawn anew by every layer's forward and used at once
  // Scratch of one call (forward or backward), views of scratch_arena_
  // planned for (scratch_B_, scratch_L_); nothing in it outlives the call.
  int64_t scratch_B_ = 0, scratch_L_ = 0;
  Tensor scratch_arena_;
  std::unique_ptr<GradBuffers> grads_;
  std::unique_ptr<Pass> chunk_pass_;  // continue_chunk's, which no backward reads
  std::vector<std::unique_ptr<StepBuffers>> step_;  // kStepSlots sets, made on use
  std::unique_ptr<StepWeights> packed_;
  Products step_products_ = Products::fp32;
};

}  // namespace lt
