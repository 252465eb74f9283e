// A RIFF/WAVE header walked as its bytes arrive: each byte is looked at once
// (chunks other than fmt and data are skipped, not kept), so the time is
// linear in the header's size, and the header before the data chunk is
// bounded: at most kMaxWavChunks chunks in kMaxWavHeaderBytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "audio/audio_file.h"

namespace lt::audio {

// Cover art or a broadcast-wave extension fit with room to spare (files
// have a handful of chunks); a file with more header than this is refused,
// not walked to its end. The walk costs about 40 ns a chunk; libsndfile
// takes 1 to 12 us a chunk and gives up by itself after some 9,000, so the
// chunk bound, below that, keeps the two readers in agreement.
constexpr int64_t kMaxWavHeaderBytes = int64_t(16) << 20;
constexpr int64_t kMaxWavChunks = 4096;

class WavHeader {
 public:
  explicit WavHeader(std::string name) : name_(std::move(name)) {}
  // Walks the header through the first bytes of p[0, n): the number of
  // bytes it took (all of them until done(), then none). Errors name the
  // file: not RIFF/WAVE, data before fmt, a header past the bound.
  size_t feed(const uint8_t* p, size_t n);
  bool done() const { return stage_ == Stage::done; }
  int64_t bytes() const { return bytes_; }  // header bytes taken so far
  // Once done: the fmt chunk as lt streams it (PCM 8/16/24/32-bit or 32-bit
  // float, 1..64 channels), or an error naming the file.
  RawAudio pcm_format() const;
  int64_t data_bytes() const { return data_bytes_; }  // -1: to the end of the input

 private:
  enum class Stage { riff, chunk, fmt, skip, done };
  void step();
  std::string name_;
  Stage stage_ = Stage::riff;
  uint8_t part_[40];      // the RIFF header, a chunk header or the fmt fields being gathered
  size_t have_ = 0;       // bytes in part_
  size_t want_ = 12;      // bytes part_ needs before the next step
  uint64_t skip_ = 0;     // bytes of a chunk still to pass over
  uint8_t fmt_[40] = {};  // the fmt chunk's fields (the first 40 bytes)
  uint32_t fmt_size_ = 0;  // 0 until a fmt chunk was read
  int64_t bytes_ = 0;
  int64_t chunks_ = 0;  // before data
  int64_t data_bytes_ = -1;
};

}  // namespace lt::audio
