// Noise: coloured Gaussian noise shaped in the frequency domain, a babble of
// talkers, and mixing at a signal-to-noise ratio.
#include <fftw3.h>

#include <algorithm>
#include <cmath>

#include "audio/audio_file.h"
#include "audio/augment.h"
#include "audio/augment_draws.h"
#include "audio/fft_convolve.h"
#include "common/error.h"

namespace lt::audio {

namespace {
double power(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += double(v) * v;
  return x.empty() ? 0 : s / double(x.size());
}

void scale_to_unit_rms(std::vector<float>& x) {
  const double p = power(x);
  if (p > 0)
    for (float& v : x) v = float(v / std::sqrt(p));
}

// x repeated (or cut) to n samples.
std::vector<float> tiled(const std::vector<float>& x, size_t n) {
  std::vector<float> y(n, 0.f);
  if (!x.empty())
    for (size_t i = 0; i < n; ++i) y[i] = x[i % x.size()];
  return y;
}
}  // namespace

std::vector<float> coloured_noise(size_t n, double exponent, uint64_t key) {
  check(exponent >= 0 && exponent <= 3, "noise colour exponent " + std::to_string(exponent) + " outside 0 .. 3");
  if (n == 0) return {};
  const size_t bins = n / 2 + 1;
  float* x = fftwf_alloc_real(n);
  fftwf_complex* f = fftwf_alloc_complex(bins);
  for (size_t i = 0; i < n; ++i) x[i] = float(gaussian(key, int64_t(i)));
  fftwf_plan forward, back;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    forward = fftwf_plan_dft_r2c_1d(int(n), x, f, FFTW_ESTIMATE);
    back = fftwf_plan_dft_c2r_1d(int(n), f, x, FFTW_ESTIMATE);
  }
  fftwf_execute(forward);
  // Amplitude f^(-exponent / 2), flat below 20 Hz; no DC.
  for (size_t k = 0; k < bins; ++k) {
    const double hz = std::max(20.0, double(k) * kSpeechSampleRate / double(n));
    const float g = k == 0 ? 0.f : float(std::pow(hz / 20.0, -exponent / 2));
    f[k][0] *= g, f[k][1] *= g;
  }
  fftwf_execute(back);
  std::vector<float> y(x, x + n);
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fftwf_destroy_plan(forward);
    fftwf_destroy_plan(back);
  }
  fftwf_free(x);
  fftwf_free(f);
  scale_to_unit_rms(y);
  return y;
}

std::vector<float> babble(const std::vector<std::vector<float>>& sources, size_t n) {
  std::vector<float> sum(n, 0.f);
  for (const std::vector<float>& s : sources) {
    std::vector<float> t = tiled(s, n);
    scale_to_unit_rms(t);
    for (size_t i = 0; i < n; ++i) sum[i] += t[i];
  }
  return sum;
}

void add_noise(std::vector<float>& x, const std::vector<float>& noise, double snr_db) {
  const std::vector<float> n = tiled(noise, x.size());
  const double px = power(x), pn = power(n);
  if (px == 0 || pn == 0) return;
  const double scale = std::sqrt(px / (pn * std::pow(10.0, snr_db / 10)));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(x[i] + scale * n[i]);
}

}  // namespace lt::audio
