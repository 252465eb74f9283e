// A stream resampler to 16 kHz over libsoxr (high quality, float, one
// channel), or a copy when the input already is at 16 kHz. Its output is
// clipped to [-1, 1], where the filter rings past full scale.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

struct soxr;

namespace lt::audio {

class Resampler {
 public:
  explicit Resampler(double input_rate, const std::string& name);
  ~Resampler();
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;
  // Appends the output for n more input samples to out.
  void process(const float* in, size_t n, std::vector<float>& out);
  // Appends what the filter still holds: the input has ended.
  void flush(std::vector<float>& out);

 private:
  void run(const float* in, size_t n, std::vector<float>& out);
  soxr* soxr_ = nullptr;  // null: no resampling
  double ratio_;
  std::string name_;
};

// The whole of x from one rate to another in one call (libsoxr, high
// quality), round(n x to / from) samples long and aligned with x: what the
// filter delays is taken back. Not clipped.
std::vector<float> resample(const std::vector<float>& x, double from, double to);

}  // namespace lt::audio
