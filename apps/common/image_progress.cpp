#include "image_progress.h"

#include <unistd.h>

#include <cstdio>

namespace lt::app {

ImageProgress::ImageProgress(int64_t total, bool quiet, int64_t height, int64_t width, int64_t channels)
    : total_(total),
      log_(!quiet && isatty(STDERR_FILENO) != 1),  // a terminal shows the images instead
      draw_(!quiet && isatty(STDERR_FILENO) == 1),
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
  if (self.log_) self.log_line(self.done_ + (subpixel + 1) * self.per_subpixel_);
}

void ImageProgress::log_line(int64_t done) {
  const Clock::time_point now = Clock::now();
  if (now - last_ < std::chrono::seconds(10)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  char eta[32] = "--";
  if (done > 0 && done < total_) {
    const long long left = (long long)(elapsed / double(done) * double(total_ - done) + 0.5);
    if (left >= 3600)
      std::snprintf(eta, sizeof eta, "%lldh%02lldm", left / 3600, left / 60 % 60);
    else
      std::snprintf(eta, sizeof eta, "%lldm%02llds", left / 60, left % 60);
  }
  std::fprintf(stderr, "%lld/%lld %s ETA %s\n", (long long)done, (long long)total_, label_.c_str(), eta);
  std::fflush(stderr);
}

void ImageProgress::finish_call(const uint8_t* pixels) {
  if (!grid_) return;
  grid_->finish(pixels);
  grid_.reset();
}

}  // namespace lt::app
