// Pixel-by-pixel generation with the recurrent form (paper eq. 16-20): every
// subpixel costs one constant-time step of the model, whatever its position.
// Unconditional sampling, and completion of a partly known image where a
// known prefix is consumed in one parallel pass and its state forked.
// A model without a recurrent form (Reformer's LSH attention) is sampled the
// way the paper timed it instead: every subpixel recomputes a parallel pass
// over the whole prefix, so an image costs O(L^2).
//
//   lt::ImageGenerator gen(*model, 16);
//   std::vector<uint8_t> pixels;  // 16 x subpixels bytes
//   gen.generate(seed, pixels, nullptr, [&](int64_t t, const auto& px) { draw(px); });
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/image_model.h"

namespace lt {

// What is known of an image to complete, per subpixel (raster order, RGB
// interleaved): values[i] is forced wherever known[i] is nonzero.
struct ImageConstraint {
  std::vector<uint8_t> values;
  std::vector<uint8_t> known;
  // Subpixels before the first unknown one: consumed by prefill.
  int64_t known_prefix() const;
};

// The first subpixel of image `row` drawn with seed: the inverse CDF of the
// histogram at a uniform draw; 0 when there is none.
int32_t first_subpixel(const std::vector<double>& histogram, uint64_t seed, int64_t row);

// Called once subpixel t of every image of the batch is decided; pixels is
// the batch's [B, subpixels] bytes so far (later subpixels are 0).
using SubpixelCallback = std::function<void(int64_t t, const std::vector<uint8_t>& pixels)>;

// How a generator gets each subpixel's distribution.
enum class GenerationForm {
  automatic,  // recurrent where the model has the form, recompute where it has not (LSH)
  recurrent,  // one step of the recurrent state (or KV cache) per subpixel
  recompute,  // one parallel pass over subpixels 0..t-1 for subpixel t (ImageModel::recompute_head)
};

class ImageGenerator {
 public:
  // Plans the recurrent state and step buffers for `batch` images at once,
  // stepping at this precision (products, state and head; recomputation
  // uses its products and head).
  ImageGenerator(ImageModel& model, int64_t batch, const Precision& precision = {},
                 GenerationForm form = GenerationForm::automatic);
  int64_t batch() const { return batch_; }
  GenerationForm form() const { return form_; }  // never automatic

  // Fills pixels [batch, subpixels]. Image b draws subpixel t from
  // sample_uniform(seed, t, b, ...): the same seed, batch size and backend
  // give the same images. The first subpixel, which the model does not
  // predict, comes from the model's first_subpixel_histogram (0 without one).
  // With a constraint, all images of the batch complete the same image.
  // nll_nats (unconditional only) receives [batch, subpixels - 1]: the
  // negative log-likelihood of subpixels 1.. under the distributions they
  // were drawn from.
  void generate(uint64_t seed, std::vector<uint8_t>& pixels, const ImageConstraint* constraint = nullptr,
                const SubpixelCallback& on_subpixel = nullptr, std::vector<double>* nll_nats = nullptr);

 private:
  ImageModel& model_;
  int64_t batch_;
  Precision precision_;
  GenerationForm form_;
  RecurrentState state_;
  Tensor head_, tokens_, next_, nll_;
  std::vector<int32_t> prefix_;  // recompute: subpixels 0..t-1 of every row

  // Recurrent form: the state after the subpixels before `start` and head_
  // for subpixel start (a known prefix by prefill, forked into every row),
  // or tokens_ = subpixel 0 for the loop to step from.
  bool begin_recurrent(const ImageConstraint* c, int64_t start, const std::vector<uint8_t>& pixels);
  // head_ = the distribution of subpixel t given subpixels 0..t-1.
  void recompute(int64_t t, const std::vector<uint8_t>& pixels);
};

}  // namespace lt
