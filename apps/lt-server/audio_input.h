// A stream's audio on its way to the recognizer: mono samples at the
// client's rate, resampled to 16 kHz by libsoxr (one resampler per stream)
// exactly as lt reads a file at that rate (lib/audio/resampler.cpp: high
// quality, float, clipped to [-1, 1]), so that a stream's results equal
// lt-asr --stream's on the same recording whatever its rate.
#pragma once
#include <cstddef>
#include <vector>

struct soxr;

namespace lt::server {

class StreamResampler {
 public:
  explicit StreamResampler(double input_rate);  // 16000: a copy
  ~StreamResampler();
  StreamResampler(const StreamResampler&) = delete;
  StreamResampler& operator=(const StreamResampler&) = delete;
  // The 16 kHz samples for n more input samples.
  std::vector<float> process(const float* in, size_t n);
  // What the filter still holds, once the input has ended.
  std::vector<float> flush();

 private:
  void run(const float* in, size_t n, std::vector<float>& out);
  soxr* soxr_ = nullptr;
  double ratio_;
};

}  // namespace lt::server
