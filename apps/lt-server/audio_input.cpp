// libsoxr's stream interface with lt's reader's settings (audio_input.h).
#include "audio_input.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace lt::server {

namespace {
constexpr double kModelRate = 16000;
}

StreamResampler::StreamResampler(double input_rate) : ratio_(kModelRate / input_rate) {
  if (input_rate == kModelRate) return;
  soxr_error_t error = nullptr;
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  soxr_ = soxr_create(input_rate, kModelRate, 1, &error, nullptr, &quality, nullptr);
  if (!soxr_ || error)
    throw std::runtime_error(std::string("cannot resample to 16 kHz: ") + (error ? soxr_strerror(error) : "no resampler"));
}

StreamResampler::~StreamResampler() {
  if (soxr_) soxr_delete(soxr_);
}

void StreamResampler::run(const float* in, size_t n, std::vector<float>& out) {
  size_t taken = 0;
  do {
    const size_t room = size_t(std::ceil(double(n - taken) * ratio_)) + 4096;
    const size_t at = out.size();
    out.resize(at + room);
    size_t used = 0, made = 0;
    const soxr_error_t error =
        soxr_process(soxr_, in ? in + taken : nullptr, in ? n - taken : 0, &used, out.data() + at, room, &made);
    if (error) throw std::runtime_error(std::string("resampling failed: ") + soxr_strerror(error));
    out.resize(at + made);
    for (size_t i = at; i < out.size(); ++i) out[i] = std::clamp(out[i], -1.f, 1.f);
    taken += used;
    if (!in && made < room) return;
  } while (in ? taken < n : true);
}

std::vector<float> StreamResampler::process(const float* in, size_t n) {
  if (!soxr_) return std::vector<float>(in, in + n);
  std::vector<float> out;
  if (n > 0) run(in, n, out);
  return out;
}

std::vector<float> StreamResampler::flush() {
  std::vector<float> out;
  if (soxr_) run(nullptr, 0, out);
  return out;
}

}  // namespace lt::server
