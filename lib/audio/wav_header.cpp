#include "audio/wav_header.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace lt::audio {

namespace {
uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }
}  // namespace

size_t WavHeader::feed(const uint8_t* p, size_t n) {
  size_t used = 0;
  while (used < n && stage_ != Stage::done) {
    size_t k;
    if (stage_ == Stage::skip) {
      k = size_t(std::min<uint64_t>(skip_, n - used));
      skip_ -= k;
      if (skip_ == 0) stage_ = Stage::chunk;
    } else {
      k = std::min(want_ - have_, n - used);
      std::memcpy(part_ + have_, p + used, k);
      have_ += k;
    }
    used += k;
    bytes_ += int64_t(k);
    if (stage_ != Stage::skip && have_ == want_) step();
  }
  return used;
}

// part_ holds want_ bytes: act on them and say what comes next.
void WavHeader::step() {
  const Stage was = stage_;
  have_ = 0;
  want_ = 8;
  stage_ = Stage::chunk;
  if (was == Stage::riff) {
    check(std::memcmp(part_, "RIFF", 4) == 0 && std::memcmp(part_ + 8, "WAVE", 4) == 0,
          name_ + ": not a WAV stream (no RIFF/WAVE header); raw PCM needs its rate, channels and format given");
    return;
  }
  if (was == Stage::fmt) {
    std::memcpy(fmt_, part_, sizeof fmt_);
    if (skip_ > 0) stage_ = Stage::skip;
    return;
  }
  const uint32_t size = le32(part_ + 4);
  if (std::memcmp(part_, "data", 4) == 0) {
    check(fmt_size_ > 0, name_ + ": WAV data chunk before its fmt chunk");
    data_bytes_ = size == 0 || size == 0xFFFFFFFFu ? -1 : int64_t(size);
    stage_ = Stage::done;
    return;
  }
  const uint64_t padded = uint64_t(size) + (size & 1);  // chunks are word-aligned
  if (++chunks_ > kMaxWavChunks || bytes_ + int64_t(padded) > kMaxWavHeaderBytes)
    throw Error(name_ + ": a WAV header of more than " + std::to_string(kMaxWavChunks) + " chunks or " +
                std::to_string(kMaxWavHeaderBytes >> 20) + " MiB before the data chunk (lt reads no more)");
  if (std::memcmp(part_, "fmt ", 4) == 0) {
    check(size >= 16, name_ + ": WAV fmt chunk of " + std::to_string(size) + " bytes");
    fmt_size_ = size;
    want_ = std::min<size_t>(size, sizeof fmt_);
    skip_ = padded - want_;
    stage_ = Stage::fmt;
    return;
  }
  skip_ = padded;
  if (skip_ > 0) stage_ = Stage::skip;
}

RawAudio WavHeader::pcm_format() const {
  check(done(), name_ + ": the WAV header is not complete");
  uint16_t tag = le16(fmt_);
  if (tag == 0xFFFE && fmt_size_ >= 26) tag = le16(fmt_ + 24);  // WAVE_FORMAT_EXTENSIBLE: the subformat's tag
  RawAudio a;
  a.channels = le16(fmt_ + 2);
  a.sample_rate = int(std::min<uint32_t>(le32(fmt_ + 4), 0x7fffffff));
  const int bits = le16(fmt_ + 14);
  check(a.channels >= 1 && a.channels <= 64, name_ + ": WAV with " + std::to_string(a.channels) + " channels");
  if (tag == 1 && bits == 8) a.format = PcmFormat::u8;
  else if (tag == 1 && bits == 16) a.format = PcmFormat::s16le;
  else if (tag == 1 && bits == 24) a.format = PcmFormat::s24le;
  else if (tag == 1 && bits == 32) a.format = PcmFormat::s32le;
  else if (tag == 3 && bits == 32) a.format = PcmFormat::f32le;
  else
    throw Error(name_ + ": unsupported WAV encoding (format tag " + std::to_string(tag) + ", " + std::to_string(bits) +
                " bits): lt streams PCM 8/16/24/32-bit and 32-bit float");
  return a;
}

}  // namespace lt::audio
