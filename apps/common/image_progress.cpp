#include "image_progress.h"

namespace lt::app {

ImageProgress::ImageProgress(int64_t total, bool quiet, int64_t height, int64_t width, int64_t channels)
    : progress_(total, quiet || stderr_is_terminal()),  // a terminal shows the images instead
      draw_(!quiet && stderr_is_terminal()),
      height_(height),
      width_(width),
      channels_(channels) {}

lt_image_options ImageProgress::options(uint64_t seed, int64_t rows, int64_t done, int64_t per_subpixel,
                                        std::string label, const std::vector<uint8_t>& known) {
  done_ = done;
  per_subpixel_ = per_subpixel;
  label_ = std::move(label);
  grid_.reset();
  if (draw_) {
    grid_ = std::make_unique<TerminalGrid>(rows, height_, width_, channels_, detect_color_mode());
    if (!known.empty()) {
      std::vector<uint8_t> every;  // the mask of each image the grid shows
      for (int64_t i = 0; i < rows; ++i) every.insert(every.end(), known.begin(), known.end());
      grid_->set_known(std::move(every));
    }
  }
  lt_image_options o = lt_image_default_options();
  o.seed = seed;
  o.progress = on_subpixel;
  o.user = this;
  return o;
}

void ImageProgress::on_subpixel(int64_t, int64_t, int64_t subpixel, const uint8_t* pixels, void* user) {
  auto& self = *static_cast<ImageProgress*>(user);
  if (self.grid_) self.grid_->draw(pixels, subpixel + 1);
  self.progress_.update(self.done_ + (subpixel + 1) * self.per_subpixel_, self.label_);
}

void ImageProgress::finish_call(const uint8_t* pixels) {
  if (!grid_) return;
  grid_->finish(pixels);
  grid_.reset();
}

}  // namespace lt::app
