// Vocal tract length perturbation on log mel frames: each filter reads the
// log energy at its centre's warped frequency, between two filter centres.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "audio/fbank.h"
#include "common/error.h"

namespace lt {

MelWarp::MelWarp(const FbankConfig& c, double alpha) : bins_(c.bins) {
  check(alpha >= 0.5 && alpha <= 2, "mel warp: factor " + std::to_string(alpha) + " outside [0.5, 2]");
  check(c.bins >= 2, "mel warp: needs 2 bins or more");
  const double high = c.high_frequency(), lo = hz_to_mel(c.low_hz), delta = (hz_to_mel(high) - lo) / (c.bins + 1);
  const double f_b = 0.8 * high * std::min(1.0, alpha);
  // w(f): f / alpha below f_b, then the line through (f_b, f_b / alpha) and (high, high).
  auto warp = [&](double f) { return f <= f_b ? f / alpha : f_b / alpha + (f - f_b) * (high - f_b / alpha) / (high - f_b); };
  below_.resize(size_t(bins_));
  weight_.resize(size_t(bins_));
  for (int b = 0; b < bins_; ++b) {
    // Centre b sits at lo + (b + 1) delta; the warped place in units of centres.
    const double place = (hz_to_mel(warp(mel_to_hz(lo + (b + 1) * delta))) - lo) / delta - 1;
    const double clamped = std::clamp(place, 0.0, double(bins_ - 1));
    const int i = std::min(int(clamped), bins_ - 2);
    below_[size_t(b)] = i;
    weight_[size_t(b)] = float(clamped - i);
  }
}

void MelWarp::apply(float* frames, int64_t n) const {
  std::vector<float> frame(static_cast<size_t>(bins_));  // once per call: a call is an utterance
  for (int64_t t = 0; t < n; ++t) {
    float* f = frames + t * bins_;
    std::copy(f, f + bins_, frame.begin());
    for (int b = 0; b < bins_; ++b) {
      const int i = below_[size_t(b)];
      const float w = weight_[size_t(b)];
      f[b] = (1 - w) * frame[size_t(i)] + w * frame[size_t(i + 1)];
    }
  }
}

}  // namespace lt
