// The paper's image model, exactly the reference's ImageGenerator: subpixels
// in raster order (RGB interleaved), bytes 0..255; inputs x[:-1], targets
// x[1:]. A 256 -> d/2 value embedding concatenated with the d/2 sinusoidal
// position code, the post-norm transformer stack, and a predictor
// Linear(d, 3K) of a discretized mixture of K logistics [logits|means|log-scales]
// (or Linear(d, 256) logits of a categorical head).
//
// The model is a SequenceModel (core()): its parameters, checkpoints,
// training passes and recurrent state; an ImageModel adds what images add,
// owning its core or over one held elsewhere (the C API's handle).
//
//   auto model = lt::ImageModel::load("weights/mnist.safetensors", lt::Device::cpu);
//   lt::RecurrentState state = model->core().new_state(batch);
//   for (t = 0; t < L; ++t) { model->core().step(state, tokens, head); model->sample(head, seed, t, tokens); }
//   // a model without a recurrent form (LSH): model->recompute_head(pixels 0..t, B, head) for step t
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/parameters.h"
#include "model/sequence_model.h"
#include "model/transformer.h"

namespace lt {

struct ImageModelConfig {
  int64_t height = 28, width = 28, channels = 1;
  int64_t mixtures = 10;
  HeadKind head = HeadKind::mixture_of_logistics;
  TransformerConfig transformer;
  // Counts of the first subpixel's values in the training set (256 or empty):
  // the model never predicts subpixel 0, so generation draws it from these.
  std::vector<double> first_subpixel_histogram;

  int64_t subpixels() const { return height * width * channels; }
  int64_t sequence_length() const { return subpixels() - 1; }  // the model reads x[:-1]
  OutputHead output_head() const;
  int64_t head_width() const { return output_head().width(); }
  void validate() const;
  // The paper's configurations: "mnist" (8 layers, 8 heads x 32, d 256, 10
  // mixtures, 28x28x1) and "cifar10" (16 layers, 32x32x3).
  static ImageModelConfig preset(const std::string& name);
  // What images add to the checkpoint's metadata: image_height, image_width,
  // image_channels and first_subpixel_histogram (docs/checkpoint-format.md).
  std::map<std::string, std::string> metadata() const;
  // The SequenceModel it is: 256 byte tokens, sequence_length() positions,
  // metadata() its family's.
  SequenceModelConfig sequence_config() const;
};

// The SequenceModel of an image checkpoint, its geometry and histogram in
// config().family_metadata; a reference checkpoint without them is sized
// from pos_embedding.pe. Errors name the file.
std::unique_ptr<SequenceModel> load_image_model(const Checkpoint& checkpoint, Device device);

// The image family on the shared SequenceModel: what images add is their
// geometry, the first subpixel's histogram, the shift of a row of subpixels
// into inputs x[:-1] and targets x[1:], their heads' sampling and generation.
// Save, load, metadata, dropout and the training passes are the core's.
class ImageModel {
 public:
  // A new model (core().init_parameters draws its weights).
  ImageModel(const ImageModelConfig& config, Device device);
  // Over an image-family SequenceModel (load_image_model's): owning it, or
  // over one that must outlive it.
  explicit ImageModel(std::unique_ptr<SequenceModel> core);
  explicit ImageModel(SequenceModel& core);
  ImageModel(ImageModel&&) noexcept;
  ~ImageModel();
  static std::unique_ptr<ImageModel> load(const std::string& path, Device device);

  // The geometry and histogram, with the core's stack and head as they are now.
  ImageModelConfig config() const;
  // The sequence model it is: parameters, device, init, save, forward and
  // backward, the recurrent state and its step, prefill and chunks.
  SequenceModel& core() { return *core_; }
  const SequenceModel& core() const { return *core_; }

  // ---- generation by recomputation: any model, the only way for LSH ----
  // One parallel pass over prefix [rows, T] (host bytes of subpixels
  // 0..T-1, T <= sequence_length()) writing head [rows, head_width]: the
  // distribution of subpixel T. The pass runs with ForwardOptions::seed 0,
  // the one evaluation uses, so an LSH model hashes every prefix with the
  // same rotations and a sample is a function of its sampling seed alone.
  void recompute_head(const std::vector<int32_t>& prefix, int64_t rows, Tensor& head, const Precision& precision = {});
  // Draws bytes [B] from head [B, head_width]; a pure function of (seed, step,
  // row), identical on both backends.
  void sample(const Tensor& head, uint64_t seed, int64_t step, Tensor& bytes) const;
  // bytes[b] = sample's byte for head[b] alone with seeds[b] at steps[b]:
  // independent images in one pass (host tensors).
  void sample_rows(const Tensor& head, const uint64_t* seeds, const int64_t* steps, Tensor& bytes) const;
  // Negative log-likelihood in nats of bytes [B] under head [B, head_width] -> nll [B].
  void log_loss(const Tensor& head, const Tensor& bytes, Tensor& nll) const;
  // The batch of images [B, subpixels] as the sequence model reads it:
  // inputs x[:-1], targets x[1:], whose loss is the mean negative
  // log-likelihood in nats per predicted subpixel (bits/dim = that / ln 2).
  // Throws on a value outside 0..255.
  SequenceBatch batch(const std::vector<int32_t>& images, int64_t rows) const;
  // The same of images int32 [B, subpixels] on any device.
  SequenceBatch batch(const Tensor& images) const;

 private:
  std::unique_ptr<SequenceModel> owned_;  // or none: a core held elsewhere
  SequenceModel* core_;
  ImageModelConfig image_;  // its geometry and histogram (the stack and head are the core's)
};

}  // namespace lt
