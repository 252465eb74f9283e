// Rooms: a synthetic impulse response (exponentially decaying Gaussian
// noise, the statistical model of a diffuse late reverberation) and its
// convolution.
#include <cmath>

#include "audio/audio_file.h"
#include "audio/augment.h"
#include "audio/augment_draws.h"
#include "audio/fft_convolve.h"
#include "common/error.h"

namespace lt::audio {

std::vector<float> room_impulse_response(double rt60, double direct_to_reverberant_db, uint64_t key) {
  check(rt60 >= 0.05 && rt60 <= 3, "reverberation time " + std::to_string(rt60) + " s outside 0.05 .. 3");
  const size_t n = size_t(rt60 * kSpeechSampleRate);
  std::vector<double> tail(n, 0.0);
  // Amplitude e^(-k t): the energy e^(-2 k t) is down 60 dB at t = rt60.
  const double k = std::log(1000.0) / (rt60 * kSpeechSampleRate);
  double energy = 0;
  for (size_t i = 1; i < n; ++i) {
    tail[i] = gaussian(key, int64_t(i)) * std::exp(-k * double(i));
    energy += tail[i] * tail[i];
  }
  const double scale = energy > 0 ? std::sqrt(std::pow(10.0, -direct_to_reverberant_db / 10) / energy) : 0;
  std::vector<float> h(n);
  h[0] = 1.f;
  for (size_t i = 1; i < n; ++i) h[i] = float(tail[i] * scale);
  return h;
}

namespace {
double rms(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += double(v) * v;
  return x.empty() ? 0 : std::sqrt(s / double(x.size()));
}
}  // namespace

std::vector<float> reverberate(const std::vector<float>& x, const std::vector<float>& h) {
  if (x.empty() || h.empty()) return x;
  std::vector<float> y = fft_convolve(x.data(), x.size(), h.data(), h.size());
  y.resize(x.size());
  const double in = rms(x), out = rms(y);
  if (out > 0)
    for (float& v : y) v = float(v * (in / out));
  return y;
}

}  // namespace lt::audio
