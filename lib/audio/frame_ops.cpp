// Frame windows (stacking for a slower frame rate, context frames) and
// SpecAugment's masks over rows of stacked frames.
#include <algorithm>
#include <string>

#include "audio/fbank.h"
#include "common/error.h"
#include "common/random.h"

namespace lt {

int64_t FrameWindow::positions(int64_t n) const {
  check(stack >= 1, "frame stack must be >= 1, is " + std::to_string(stack));
  return (n + stack - 1) / stack;
}

void FrameWindow::validate() const {
  check(stack >= 1 && stack <= 16, "frame stack " + std::to_string(stack) + " outside 1..16");
  check(past >= 0 && past <= 64 && future >= 0 && future <= 64,
        "frame context " + std::to_string(past) + "," + std::to_string(future) + " outside 0..64 frames each side");
}

void window_frames(const float* frames, int64_t first, int64_t m, int64_t last, int bins, const FrameWindow& w,
                   int64_t p0, int64_t count, float* out) {
  const int span = w.frames();
  for (int64_t p = p0; p < p0 + count; ++p)
    for (int j = 0; j < span; ++j) {
      const int64_t t = std::clamp<int64_t>((p * w.stack) - w.past + j, 0, last);
      if (t < first || t >= first + m)
        throw Error("window_frames: position " + std::to_string(p) + " reads frame " + std::to_string(t) +
                    ", not among frames " + std::to_string(first) + ".." + std::to_string(first + m - 1));
      std::copy(frames + (t - first) * bins, frames + (t - first + 1) * bins, out + ((p - p0) * span + j) * bins);
    }
}

void spec_augment(float* rows, int64_t n, int bins, int stack, const SpecAugment& o, uint64_t seed) {
  uint64_t draws = 0;
  // Uniform integer in [0, hi], a pure function of (seed, draw number).
  auto uniform = [&](int64_t hi) { return int64_t(splitmix64(seed + 0x9E3779B97F4A7C15ull * ++draws) % uint64_t(hi + 1)); };
  const int64_t width = int64_t(bins) * stack;
  for (int m = 0; m < o.freq_masks; ++m) {
    const int64_t w = uniform(std::min<int64_t>(o.freq_width, bins)), f0 = uniform(bins - w);
    for (int64_t t = 0; t < n; ++t)
      for (int j = 0; j < stack; ++j) std::fill(rows + t * width + j * bins + f0, rows + t * width + j * bins + f0 + w, 0.f);
  }
  for (int m = 0; m < o.time_masks && n > 0; ++m) {
    const int64_t w = uniform(std::min<int64_t>(o.time_width, n)), t0 = uniform(n - w);
    std::fill(rows + t0 * width, rows + (t0 + w) * width, 0.f);
  }
}

}  // namespace lt
