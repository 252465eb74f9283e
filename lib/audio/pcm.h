// Decoding interleaved PCM bytes to mono floats: shared by raw files and
// streams. Integer samples scale to [-1, 1) as libsndfile's float reads do.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lt/audio.h"

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

// Appends the mono mix of `frames` whole frames at p; throws naming `name`
// and the sample's index (first_sample + offset) on a NaN or infinity.
void append_mono(const uint8_t* p, int64_t frames, int channels, PcmFormat f, const std::string& name,
                 int64_t first_sample, std::vector<float>& out);

}  // namespace lt::audio
