// The filterbank (audio/fbank.h lists every step and constant): FFTW's
// real-to-complex transform planned once per configuration, the mel filters
// kept as one weight row per bin over its span of FFT bins.
#include "audio/fbank.h"

#include <fftw3.h>

#include <cmath>
#include <mutex>
#include <string>

#include "audio/fft_convolve.h"
#include "common/error.h"

namespace lt {

int64_t FbankConfig::frame_length() const { return int64_t(std::llround(sample_rate * frame_ms / 1000.0)); }
int64_t FbankConfig::hop() const { return int64_t(std::llround(sample_rate * hop_ms / 1000.0)); }
int64_t FbankConfig::fft_size() const {
  int64_t n = 1;
  while (n < frame_length()) n *= 2;
  return n;
}

double FbankConfig::high_frequency() const { return high_hz > 0 ? high_hz : sample_rate / 2.0; }

double hz_to_mel(double hz) { return 1127.0 * std::log(1.0 + hz / 700.0); }
double mel_to_hz(double mel) { return 700.0 * (std::exp(mel / 1127.0) - 1.0); }

struct Fbank::Plan {
  int64_t L = 0, N = 0;
  std::vector<float> window;
  struct Filter {
    int64_t first = 0;
    std::vector<float> weights;  // FFT bins first, first + 1, ...
  };
  std::vector<Filter> filters;
  fftwf_plan plan = nullptr;
  ~Plan() {
    std::lock_guard<std::mutex> lock(audio::fftw_planner_mutex());
    if (plan) fftwf_destroy_plan(plan);
  }
};

namespace {
// A thread's frame and spectrum, in FFTW's aligned memory (the plan was made
// on such arrays, so new-array execution may use them).
struct FrameBuffers {
  int64_t N = 0;
  float* frame = nullptr;
  fftwf_complex* spectrum = nullptr;
  std::vector<float> power;
  void ensure(int64_t n) {
    if (N == n) return;
    release();
    N = n;
    frame = fftwf_alloc_real(size_t(n));
    spectrum = fftwf_alloc_complex(size_t(n / 2 + 1));
    power.resize(size_t(n / 2 + 1));
  }
  void release() {
    if (frame) fftwf_free(frame);
    if (spectrum) fftwf_free(spectrum);
    frame = nullptr;
    spectrum = nullptr;
  }
  ~FrameBuffers() { release(); }
};
FrameBuffers& frame_buffers() {
  thread_local FrameBuffers b;
  return b;
}
}  // namespace

Fbank::Fbank(const FbankConfig& c) : config_(c) {
  check(c.sample_rate >= 1000 && c.sample_rate <= 192000, "fbank: sample rate " + std::to_string(c.sample_rate));
  check(c.frame_ms > 0 && c.hop_ms > 0 && c.frame_length() >= 16 && c.frame_length() <= (1 << 16) && c.hop() >= 1,
        "fbank: frames of " + std::to_string(c.frame_ms) + " ms every " + std::to_string(c.hop_ms) + " ms");
  const double nyquist = c.sample_rate / 2.0, high = c.high_frequency();
  check(c.low_hz >= 0 && c.low_hz < high && high <= nyquist,
        "fbank: band " + std::to_string(c.low_hz) + ".." + std::to_string(high) + " Hz is not inside 0.." +
            std::to_string(nyquist) + " Hz");
  check(c.log_floor > 0 && c.preemphasis >= 0 && c.preemphasis < 1, "fbank: log floor > 0, pre-emphasis in [0, 1)");
  auto p = std::make_shared<Plan>();
  p->L = c.frame_length();
  p->N = c.fft_size();
  check(c.bins >= 1 && c.bins < p->N / 2, "fbank: " + std::to_string(c.bins) + " bins for " +
                                              std::to_string(p->N / 2) + " FFT bins");
  p->window.resize(size_t(p->L));
  for (int64_t i = 0; i < p->L; ++i)
    p->window[size_t(i)] = float(std::pow(0.5 - 0.5 * std::cos(2 * M_PI * double(i) / double(p->L - 1)), 0.85));
  // Filter b rises from mel edge b to b + 1 and falls to b + 2 (Kaldi MelBanks).
  const double lo = hz_to_mel(c.low_hz), delta = (hz_to_mel(high) - lo) / (c.bins + 1);
  for (int b = 0; b < c.bins; ++b) {
    const double left = lo + b * delta, center = left + delta, right = center + delta;
    Plan::Filter f;
    f.first = -1;
    for (int64_t k = 0; k < p->N / 2; ++k) {
      const double m = hz_to_mel(double(k) * c.sample_rate / double(p->N));
      if (m <= left || m >= right) continue;
      if (f.first < 0) f.first = k;
      f.weights.resize(size_t(k - f.first), 0.f);  // (never grows over a gap: the span is contiguous)
      f.weights.push_back(float(m <= center ? (m - left) / (center - left) : (right - m) / (right - center)));
    }
    check(f.first >= 0, "fbank: mel bin " + std::to_string(b) + " covers no FFT bin (too many bins for " +
                            std::to_string(p->N) + " points)");
    p->filters.push_back(std::move(f));
  }
  FrameBuffers& buf = frame_buffers();
  buf.ensure(p->N);
  {
    std::lock_guard<std::mutex> lock(audio::fftw_planner_mutex());
    p->plan = fftwf_plan_dft_r2c_1d(int(p->N), buf.frame, buf.spectrum, FFTW_ESTIMATE);
  }
  check(p->plan != nullptr, "fbank: FFTW could not plan a " + std::to_string(p->N) + "-point transform");
  plan_ = std::move(p);
}

Fbank::~Fbank() = default;

int64_t Fbank::frames(int64_t samples) const {
  const int64_t L = plan_->L;
  return samples < L ? 0 : 1 + (samples - L) / config_.hop();
}

void Fbank::compute(const float* samples, int64_t n, float* out) const {
  const Plan& p = *plan_;
  const int64_t frames_n = frames(n), L = p.L, N = p.N, hop = config_.hop();
  FrameBuffers& buf = frame_buffers();
  buf.ensure(N);
  const float pre = float(config_.preemphasis), floor = float(config_.log_floor);
  for (int64_t t = 0; t < frames_n; ++t) {
    float* x = buf.frame;
    const float* s = samples + t * hop;
    double mean = 0;
    if (config_.remove_dc) {
      for (int64_t i = 0; i < L; ++i) mean += s[i];
      mean /= double(L);
    }
    for (int64_t i = 0; i < L; ++i) x[i] = s[i] - float(mean);
    for (int64_t i = L - 1; i > 0; --i) x[i] -= pre * x[i - 1];
    x[0] -= pre * x[0];
    for (int64_t i = 0; i < L; ++i) x[i] *= p.window[size_t(i)];
    for (int64_t i = L; i < N; ++i) x[i] = 0.f;
    fftwf_execute_dft_r2c(p.plan, x, buf.spectrum);
    for (int64_t k = 0; k <= N / 2; ++k)
      buf.power[size_t(k)] = buf.spectrum[k][0] * buf.spectrum[k][0] + buf.spectrum[k][1] * buf.spectrum[k][1];
    float* o = out + t * config_.bins;
    for (int b = 0; b < config_.bins; ++b) {
      const Plan::Filter& f = p.filters[size_t(b)];
      float e = 0;
      for (size_t j = 0; j < f.weights.size(); ++j) e += f.weights[j] * buf.power[size_t(f.first) + j];
      o[b] = std::log(std::max(e, floor));
    }
  }
}

FbankStream::FbankStream(const Fbank& fbank) : fbank_(fbank) {}

void FbankStream::push(const float* samples, int64_t n, std::vector<float>& frames_out) {
  pending_.insert(pending_.end(), samples, samples + n);
  const int64_t k = fbank_.frames(int64_t(pending_.size()));
  if (k == 0) return;
  const int bins = fbank_.config().bins;
  const size_t at = frames_out.size();
  frames_out.resize(at + size_t(k * bins));
  fbank_.compute(pending_.data(), int64_t(pending_.size()), frames_out.data() + at);
  pending_.erase(pending_.begin(), pending_.begin() + long(k * fbank_.config().hop()));
  frames_ += k;
}

}  // namespace lt
