// Pixel-by-pixel generation with the recurrent form (paper eq. 16-20): every
// subpixel costs one constant-time step of the model, whatever its position.
// Unconditional sampling, and completion of a partly known image where a
// known prefix is consumed in one parallel pass and its state forked.
//
//   lt::ImageGenerator gen(*model, 16);
//   std::vector<uint8_t> pixels;  // 16 x subpixels bytes
//   gen.generate(seed, pixels, nullptr, [&](int64_t t, const auto& px) { draw(px); });
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "lt/image_model.h"

namespace lt {

// What is known of an image to complete, per subpixel (raster order, RGB
// interleaved): values[i] is forced wherever known[i] is nonzero.
struct ImageConstraint {
  std::vector<uint8_t> values;
  std::vector<uint8_t> known;
  // Subpixels before the first unknown one: consumed by prefill.
  int64_t known_prefix() const;
};

// Called once subpixel t of every image of the batch is decided; pixels is
// the batch's [B, subpixels] bytes so far (later subpixels are 0).
using SubpixelCallback = std::function<void(int64_t t, const std::vector<uint8_t>& pixels)>;

class ImageGenerator {
 public:
  // Plans the recurrent state and step buffers for `batch` images at once,
  // stepping at this precision (products, state and head).
  ImageGenerator(ImageModel& model, int64_t batch, const Precision& precision = {});
  int64_t batch() const { return batch_; }

  // Fills pixels [batch, subpixels]. Image b draws subpixel t from
  // sample_uniform(seed, t, b, ...): the same seed, batch size and backend
  // give the same images. The first subpixel, which the model does not
  // predict, comes from the model's first_subpixel_histogram (0 without one).
  // With a constraint, all images of the batch complete the same image.
  // nll_nats (unconditional only) receives each image's negative
  // log-likelihood of subpixels 1.. under the model, summed over steps.
  void generate(uint64_t seed, std::vector<uint8_t>& pixels, const ImageConstraint* constraint = nullptr,
                const SubpixelCallback& on_subpixel = nullptr, std::vector<double>* nll_nats = nullptr);

 private:
  ImageModel& model_;
  int64_t batch_;
  Precision precision_;
  RecurrentState state_;
  Tensor head_, tokens_, next_, nll_;
};

}  // namespace lt
