// What lt-sample-image and lt-complete show while lt.h draws images: the
// images themselves in the terminal, subpixel by subpixel (stderr is a
// terminal), else a progress line every 10 seconds (a log stays readable);
// nothing with --quiet. One callback for both.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lt.h"
#include "terminal_grid.h"

namespace lt::app {

class ImageProgress {
 public:
  // total: subpixels of every image the tool will draw.
  ImageProgress(int64_t total, bool quiet, int64_t height, int64_t width, int64_t channels);
  // Images drawn in a fresh grid by the next call of lt_image_sample or
  // lt_image_complete (`rows` of them): `done` subpixels were drawn before,
  // each subpixel of the call counts `per_subpixel` (its images), `label`
  // follows the count. known (one image's subpixels, or empty) marks what
  // each completion keeps.
  lt_image_options options(uint64_t seed, int64_t rows, int64_t done, int64_t per_subpixel, std::string label,
                           const std::vector<uint8_t>& known = {});
  // The call's last frame, its pixels [rows x subpixels].
  void finish_call(const uint8_t* pixels);

 private:
  using Clock = std::chrono::steady_clock;
  static void on_subpixel(int64_t first, int64_t rows, int64_t subpixel, const uint8_t* pixels, void* user);
  // "done/total label ETA 1m05s" on stderr, at most every 10 seconds.
  void log_line(int64_t done);
  int64_t total_;
  bool log_, draw_;  // progress lines (not quiet, stderr not a terminal); the grid (a terminal)
  int64_t height_, width_, channels_, done_ = 0, per_subpixel_ = 0;
  std::string label_;
  std::unique_ptr<TerminalGrid> grid_;
  Clock::time_point start_ = Clock::now(), last_ = start_;
};

}  // namespace lt::app
