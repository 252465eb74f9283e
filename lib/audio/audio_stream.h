// Audio that arrives in pieces (stdin, pipes, a file still being written),
// as mono float samples in [-1, 1] at 16 kHz, like read_audio's.
//
//   lt::AudioStream in(0, "-");  // WAV header or raw on stdin
//   std::vector<float> chunk;
//   while (in.read(chunk)) feed(chunk);
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "audio/audio_file.h"

namespace lt {

// Audio read from a file descriptor as it arrives: a WAV header (PCM 8, 16,
// 24 or 32 bits, or 32-bit float; any rate and channels; a data size of 0
// or 0xFFFFFFFF reads to the end, as streaming writers leave it) or, when
// raw.sample_rate > 0, raw PCM.
class AudioStream {
 public:
  // name "-" reads as "stdin" in messages. follow_seconds > 0: a file that
  // is still being written (tail -f): its end is reached only once it has
  // not grown for that long.
  AudioStream(int fd, std::string name, const RawAudio& raw = {}, double follow_seconds = 0);
  ~AudioStream();
  // Replaces out with the next samples, mono at 16 kHz: what one read of the
  // input gave (it may be empty while input trickles in). False at the end
  // of the input, after the resampler's last samples.
  bool read(std::vector<float>& out);
  const std::string& name() const { return name_; }
  int64_t samples_read() const { return samples_; }  // output samples so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
  int64_t samples_ = 0;
};

}  // namespace lt
