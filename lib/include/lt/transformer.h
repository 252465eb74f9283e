// The post-norm transformer encoder stack of the reference implementation
// (fast-transformers' TransformerEncoder), with explicit forward and backward
// passes for training and a recurrent step for generation:
//   x = norm1(x + dropout(out_proj(attention(q_proj x, k_proj x, v_proj x))))
//   x = norm2(x + dropout(linear2(dropout(relu(linear1(x))))))
// followed by a final LayerNorm. Parameter names are the reference's
// state_dict keys: {prefix}layers.{i}.attention.query_projection.weight, ...
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lt/feature_map.h"
#include "lt/packed_linear.h"
#include "lt/parameters.h"
#include "lt/tensor.h"

namespace lt {

enum class AttentionKind { causal_linear, softmax };
const char* attention_name(AttentionKind k);         // "causal-linear" | "softmax"
AttentionKind parse_attention(const std::string& s);  // accepts the reference's "full" for softmax

struct TransformerConfig {
  int64_t layers = 8;
  int64_t heads = 8;
  int64_t head_dim = 32;  // E = M, the reference's query/value dimensions
  int64_t d_model = 256;  // must equal heads * head_dim
  int64_t ff_dim = 1024;  // the reference uses 4 * d_model
  AttentionKind attention = AttentionKind::causal_linear;
  std::string feature_map = "elu";
  float dropout = 0.1f;
  // Throws lt::Error naming the inconsistent sizes.
  void validate() const;
};

class TransformerStack {
 public:
  // Declares the stack's parameters in params under prefix ("transformer.").
  TransformerStack(const TransformerConfig& config, Parameters& params,
                   const std::string& prefix = "transformer.");
  ~TransformerStack();
  const TransformerConfig& config() const { return config_; }
  // The dropout of later training forwards (a resumed run may change it).
  void set_dropout(float p);

  // Fills the stack's parameters as torch's defaults do: Linear weights and
  // biases U(-1/sqrt(in), 1/sqrt(in)), LayerNorm ones and zeros.
  void init_parameters(uint64_t seed) const;

  // ---- training: causal over L, all positions at once ----
  // x, y [B, L, d_model]. Saves what backward needs in buffers planned for
  // (B, L) (re-planned only when the shape changes). Dropout masks derive
  // from seed; train=false disables dropout.
  void forward(const Tensor& x, Tensor& y, bool train, uint64_t seed);
  // dy [B, L, d] -> dx [B, L, d]; parameter gradients accumulate in params.
  void backward(const Tensor& dy, Tensor& dx);

  // ---- generation: the recurrent form, one position for a batch ----
  // The state is one flat caller-owned float tensor [state_numel(B, max_len)]:
  // per layer S [B, H, E, M] then Z [B, H, E] for linear attention (eq.
  // 18-19), or the KV cache [B, max_len, H, E] then [B, max_len, H, M] for
  // softmax. At bf16 step precision S is stored as bfloat16 (two per float),
  // so plan a state after choosing the precision.
  int64_t state_numel(int64_t batch, int64_t max_len) const;
  // One position t for every batch element: x [B, d] -> y [B, d]; updates
  // state. Allocation-free after the first call with a given B.
  void step(Tensor& state, int64_t max_len, const Tensor& x, int64_t t, Tensor& y);
  // Prepares the current weights for step()'s matrix products (step() does
  // it at its first call): q, k and v become one product of 3d outputs, and
  // on an AVX-512 CPU every product is packed (PackedLinear): fp32 is the
  // same arithmetic about 1.7x faster than OpenBLAS at batch 64; bf16 rounds
  // operands to 8 bits for about 3x. Elsewhere OpenBLAS or cuBLAS (fp32 or
  // TF32, bias and ReLU in cuBLASLt's epilogue) multiply the plain matrices.
  // The prepared copy is a snapshot: prepare again after changing the
  // weights. bf16 also keeps the linear-attention state S in bfloat16 (half
  // its bytes; sums stay float32, Z stays float32); on a CUDA stack it means
  // the bfloat16 state alone. bf16 throws lt::Error on a CPU without
  // AVX512_BF16. Training and prefill never use the prepared copy.
  void pack_step_weights(StepPrecision precision);
  StepPrecision step_precision() const;
  // Consumes positions 0..L-1 of x [B, L, d] in one parallel pass (eval mode)
  // writing y [B, L, d] and the state after position L-1, so step() continues
  // at t = L exactly as if it had run L steps.
  void prefill(const Tensor& x, Tensor& y, Tensor& state, int64_t max_len);
  // Copies batch element src of state into element dst of another state of
  // the same max_len (fork a completion, e.g. prefill once, sample K times).
  void copy_state_element(const Tensor& src_state, int64_t src_batch, int64_t src,
                          Tensor& dst_state, int64_t dst_batch, int64_t dst,
                          int64_t max_len) const;

 private:
  struct LayerParams {
    size_t wq, bq, wk, bk, wv, bv, wo, bo, w1, b1, w2, b2, g1, be1, g2, be2;
  };
  struct LayerActs;    // saved activations of one layer
  struct GradBuffers;  // scratch of the backward pass, shared by the layers
  struct StepBuffers;  // scratch of step(), planned for one batch size
  struct StepWeights;  // step()'s weights, prepared by pack_step_weights
  void plan(int64_t B, int64_t L, Device d);
  void layer_forward(size_t l, const Tensor& x, bool train, uint64_t seed);
  void layer_backward(size_t l, const Tensor& x, const Tensor& dy, Tensor& dx, uint64_t seed);
  struct StateViews {
    Tensor a, b;  // S and Z, or K and V caches
  };
  StateViews state_views(Tensor& state, size_t l, int64_t B, int64_t max_len) const;
  bool bf16_state() const;  // S in bfloat16: linear attention at bf16 precision

  TransformerConfig config_;
  Parameters& params_;
  std::vector<LayerParams> layers_;
  size_t norm_g_, norm_b_;
  std::unique_ptr<FeatureMap> phi_;
  // Training buffers, planned for (B_, L_).
  int64_t B_ = 0, L_ = 0;
  std::vector<std::unique_ptr<LayerActs>> acts_;
  Tensor input_;                   // [B*L, d], aliases the caller's x until backward
  std::vector<Tensor> layer_out_;  // output of layer l (input of l+1), pre final norm
  Tensor final_mean_, final_rstd_;
  bool train_ = false;
  uint64_t seed_ = 0;
  std::unique_ptr<GradBuffers> grads_;
  std::unique_ptr<StepBuffers> step_;
  std::unique_ptr<StepWeights> packed_;
  StepPrecision precision_ = StepPrecision::fp32;  // of step(): its products' (CPU) and state's
};

}  // namespace lt
