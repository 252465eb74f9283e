// Decoding interleaved PCM bytes to mono floats: shared by raw files and
// streams. Integer samples scale to [-1, 1) as libsndfile's float reads do.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "audio/audio_file.h"
#include "common/error.h"

namespace lt::audio {

// Sample i of a frame of `channels` at p, as float.
inline float pcm_sample(const uint8_t* p, PcmFormat f) {
  switch (f) {
    case PcmFormat::u8:
      return (float(p[0]) - 128.f) / 128.f;
    case PcmFormat::s16le:
      return float(int16_t(uint16_t(p[0] | p[1] << 8))) / 32768.f;
    case PcmFormat::s24le:
      return float(double(int32_t(uint32_t(p[0]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 24)) / 2147483648.0);
    case PcmFormat::s32le:
      return float(double(int32_t(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24)) /
                   2147483648.0);
    case PcmFormat::f32le: {
      const uint32_t bits = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
      float v;
      std::memcpy(&v, &bits, 4);
      return v;
    }
  }
  return 0.f;
}

// Sample `index` of the file `name` as lt reads it: within [-1, 1] as it is,
// up to kMaxSampleMagnitude clipped to +-1 (float files may run a little hot),
// beyond that, NaN or infinite an error naming the file and the sample: such
// values are not audio, and would overflow the resampler and the filterbank.
inline float checked_sample(float v, const std::string& name, int64_t index) {
  if (v >= -1.f && v <= 1.f) return v;
  if (v >= -kMaxSampleMagnitude && v <= kMaxSampleMagnitude) return v > 0 ? 1.f : -1.f;
  char value[96];
  std::snprintf(value, sizeof value, "%g, beyond the +-%g lt reads (full scale is +-1)", double(v),
                double(kMaxSampleMagnitude));
  throw Error(name + ": sample " + std::to_string(index) + " is " +
              (std::isnan(v) ? "NaN" : std::isinf(v) ? "infinite" : value));
}

// Appends the mono mix of `frames` whole frames at p (checked_sample's
// rules; the sample's index counts from first_sample frames).
void append_mono(const uint8_t* p, int64_t frames, int channels, PcmFormat f, const std::string& name,
                 int64_t first_sample, std::vector<float>& out);

}  // namespace lt::audio
