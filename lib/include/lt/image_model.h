// The paper's image model, exactly the reference's ImageGenerator: subpixels
// in raster order (RGB interleaved), bytes 0..255; inputs x[:-1], targets
// x[1:]. A 256 -> d/2 value embedding concatenated with the d/2 sinusoidal
// position code, the post-norm transformer stack, and a predictor
// Linear(d, 3K) of a discretized mixture of K logistics [logits|means|log-scales]
// (or Linear(d, 256) logits of a categorical head).
//
//   auto model = lt::ImageModel::load("weights/mnist.safetensors", lt::Device::cpu);
//   lt::Tensor state = model->new_state(batch);
//   for (t = 0; t < L; ++t) { model->step(state, tokens, t, head); model->sample(head, seed, t, tokens); }
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lt/parameters.h"
#include "lt/tensor.h"
#include "lt/transformer.h"

namespace lt {

enum class OutputHead { mixture_of_logistics, categorical };
const char* output_head_name(OutputHead h);  // "mol" | "categorical", as --output-head and checkpoints say

struct ImageModelConfig {
  int64_t height = 28, width = 28, channels = 1;
  int64_t mixtures = 10;
  OutputHead head = OutputHead::mixture_of_logistics;
  TransformerConfig transformer;
  // Counts of the first subpixel's values in the training set (256 or empty):
  // the model never predicts subpixel 0, so generation draws it from these.
  std::vector<double> first_subpixel_histogram;

  int64_t subpixels() const { return height * width * channels; }
  int64_t sequence_length() const { return subpixels() - 1; }  // the model reads x[:-1]
  int64_t head_width() const { return head == OutputHead::categorical ? 256 : 3 * mixtures; }
  void validate() const;
  // The paper's configurations: "mnist" (8 layers, 8 heads x 32, d 256, 10
  // mixtures, 28x28x1) and "cifar10" (16 layers, 32x32x3).
  static ImageModelConfig preset(const std::string& name);
};

class ImageModel {
 public:
  ImageModel(const ImageModelConfig& config, Device device);
  ~ImageModel();
  // Reads a safetensors checkpoint: sizes from the tensor shapes, what shapes
  // cannot tell (heads, attention, image size) from the metadata. Errors name
  // the file and the tensor or key.
  static std::unique_ptr<ImageModel> load(const std::string& path, Device device);
  // The model's tensors under the reference's names plus its config as
  // metadata, with extra entries and tensors (a trainer's "optimizer.*",
  // which load() skips), written atomically.
  void save(const std::string& path, const std::map<std::string, std::string>& extra = {},
            const std::map<std::string, Tensor>& extra_tensors = {}) const;
  std::map<std::string, std::string> metadata() const;

  const ImageModelConfig& config() const { return config_; }
  void set_dropout(float p);  // for later training steps, and saved with the model
  Parameters& params() { return params_; }
  const Parameters& params() const { return params_; }
  Device device() const { return device_; }
  void init_parameters(uint64_t seed);

  // ---- training and evaluation ----
  // images int32 [B, subpixels] of bytes. Returns the mean negative
  // log-likelihood in nats per predicted subpixel (bits/dim = that / ln 2).
  // nll, if given, receives [B, sequence_length] per-subpixel values.
  double forward(const Tensor& images, bool train, uint64_t seed, Tensor* nll = nullptr);
  // Gradients of the mean loss of the last forward, accumulated into params().grads().
  void backward();

  // ---- generation, the recurrent form ----
  int64_t state_numel(int64_t batch) const;
  Tensor new_state(int64_t batch) const;  // zeros: the empty prefix
  // Reads tokens int32 [B] at position t and writes head [B, head_width]: the
  // distribution of subpixel t+1. Allocation-free after the first call.
  void step(Tensor& state, const Tensor& tokens, int64_t t, Tensor& head);
  // The precision of step(); packs the weights now on the CPU
  // (TransformerStack::pack_step_weights). fp32 until set; bf16 stores the
  // linear-attention state in bfloat16, so it changes state_numel: make
  // states after setting it. On the CPU bf16 also rounds the products'
  // operands (and throws without AVX512_BF16); on CUDA the products stay
  // cuBLAS's.
  void set_step_precision(StepPrecision precision);
  StepPrecision step_precision() const;
  // Packs the current weights again (ImageGenerator does at every generate,
  // so that changed weights are never sampled from a stale copy).
  void pack_step_weights();
  // Consumes tokens int32 [B, T] (positions 0..T-1, T >= 1) in one parallel pass;
  // writes the state after them and head [B, head_width] for subpixel T.
  void prefill(const Tensor& tokens, Tensor& state, Tensor& head);
  // Copies element src of a state for batch src_batch into element dst of one for dst_batch.
  void copy_state_element(const Tensor& src_state, int64_t src_batch, int64_t src, Tensor& dst_state,
                          int64_t dst_batch, int64_t dst) const;
  // Draws bytes [B] from head [B, head_width]; a pure function of (seed, step,
  // row), identical on both backends.
  void sample(const Tensor& head, uint64_t seed, int64_t step, Tensor& bytes) const;
  // Negative log-likelihood in nats of bytes [B] under head [B, head_width] -> nll [B].
  void log_loss(const Tensor& head, const Tensor& bytes, Tensor& nll) const;

 private:
  struct Buffers;
  void embed(const Tensor& tokens, int64_t offset, Tensor& x);

  ImageModelConfig config_;
  Device device_;
  Parameters params_;
  std::unique_ptr<TransformerStack> stack_;
  size_t embedding_, predictor_w_, predictor_b_;
  Tensor pe_;  // position code [sequence_length, d/2]
  std::unique_ptr<Buffers> buf_;
};

}  // namespace lt
