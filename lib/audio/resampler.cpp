// libsoxr's stream interface: input goes in as it comes, and the filter's
// tail comes out when the input ends (in = NULL).
#include "audio/resampler.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>

#include "audio/audio_file.h"
#include "common/error.h"

namespace lt::audio {

Resampler::Resampler(double input_rate, const std::string& name)
    : ratio_(kSpeechSampleRate / input_rate), name_(name) {
  check(input_rate >= 1000 && input_rate <= 768000,
        name + ": sample rate " + std::to_string(int64_t(input_rate)) + " Hz is outside 1 kHz .. 768 kHz");
  if (input_rate == kSpeechSampleRate) return;
  soxr_error_t error = nullptr;
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  soxr_ = soxr_create(input_rate, kSpeechSampleRate, 1, &error, nullptr, &quality, nullptr);
  check(soxr_ && !error, name + ": cannot resample " + std::to_string(int64_t(input_rate)) + " Hz to 16 kHz: " +
                             soxr_strerror(error));
}

Resampler::~Resampler() {
  if (soxr_) soxr_delete(soxr_);
}

void Resampler::run(const float* in, size_t n, std::vector<float>& out) {
  // Room for every output of this input plus the filter's delay; soxr may
  // need several calls to take all of the input.
  size_t taken = 0;
  do {
    const size_t room = size_t(std::ceil(double(n - taken) * ratio_)) + 4096;
    const size_t at = out.size();
    out.resize(at + room);
    size_t used = 0, made = 0;
    const soxr_error_t error = soxr_process(soxr_, in ? in + taken : nullptr, in ? n - taken : 0, &used,
                                            out.data() + at, room, &made);
    check(!error, name_ + ": resampling failed: " + soxr_strerror(error));
    out.resize(at + made);
    // The filter rings past full scale at sharp edges (2.03 from a sawtooth
    // of 8-bit samples at 8 kHz): clipped, so that what lt reads stays in [-1, 1].
    for (size_t i = at; i < out.size(); ++i) out[i] = std::clamp(out[i], -1.f, 1.f);
    taken += used;
    if (!in && made < room) return;  // the tail is out
  } while (in ? taken < n : true);
}

void Resampler::process(const float* in, size_t n, std::vector<float>& out) {
  if (!soxr_) {
    out.insert(out.end(), in, in + n);
    return;
  }
  if (n > 0) run(in, n, out);
}

void Resampler::flush(std::vector<float>& out) {
  if (soxr_) run(nullptr, 0, out);
}

std::vector<float> resample(const std::vector<float>& x, double from, double to) {
  if (from == to || x.empty()) return x;
  const size_t n = size_t(std::llround(double(x.size()) * to / from));
  std::vector<float> y(n);
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  size_t used = 0, made = 0;
  const soxr_error_t error =
      soxr_oneshot(from, to, 1, x.data(), x.size(), &used, y.data(), n, &made, &io, &quality, nullptr);
  check(!error, std::string("resampling failed: ") + (error ? soxr_strerror(error) : ""));
  y.resize(n);  // soxr_oneshot gives the aligned output; a last sample it rounds away stays 0
  return y;
}

}  // namespace lt::audio
