// Frame stacking (a slower frame rate for the encoder) and SpecAugment's
// masks, both over rows of stacked frames.
#include <algorithm>
#include <string>

#include "lt/error.h"
#include "lt/fbank.h"
#include "lt/random.h"

namespace lt {

int64_t stacked_frames(int64_t n, int k) {
  check(k >= 1, "frame stack must be >= 1, is " + std::to_string(k));
  return (n + k - 1) / k;
}

void stack_frames(const float* frames, int64_t n, int bins, int k, float* out) {
  const int64_t positions = stacked_frames(n, k);
  for (int64_t p = 0; p < positions; ++p)
    for (int j = 0; j < k; ++j) {
      const int64_t t = std::min(p * k + j, n - 1);
      std::copy(frames + t * bins, frames + (t + 1) * bins, out + (p * k + j) * bins);
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
