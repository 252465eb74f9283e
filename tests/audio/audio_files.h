// Test audio written through libsndfile itself: a known signal in a chosen
// container, rate and channel count, and the analytic signal at 16 kHz to
// compare what lt reads with; bytes fed to the stream reader through a pipe.
#pragma once
#include <sndfile.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "audio/audio_stream.h"
#include "test_util.h"

namespace lt::test {

struct Tone {
  double hz, phase, amplitude;
  double at(double seconds) const { return amplitude * std::sin(2 * M_PI * hz * seconds + phase); }
};

// channels x frames interleaved: channel c is the tone scaled by (1 + c) / channels.
inline void write_tone(const std::string& path, int format, int rate, int channels, double seconds, const Tone& tone) {
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = channels;
  info.format = format;
  REQUIRE_MESSAGE(sf_format_check(&info), "libsndfile cannot write format " << format);
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  REQUIRE_MESSAGE(f != nullptr, sf_strerror(nullptr));
  const int64_t frames = int64_t(seconds * rate);
  std::vector<float> x(size_t(frames * channels));
  for (int64_t i = 0; i < frames; ++i)
    for (int c = 0; c < channels; ++c) x[size_t(i * channels + c)] = float(tone.at(double(i) / rate) * (1 + c) / channels);
  REQUIRE(sf_writef_float(f, x.data(), frames) == frames);
  sf_close(f);
}

// Mono float samples as a 32-bit float WAV, written as given (NaN too).
inline void write_float_wav(const std::string& path, const std::vector<float>& x, int rate = 16000) {
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  REQUIRE_MESSAGE(f != nullptr, sf_strerror(nullptr));
  REQUIRE(sf_writef_float(f, x.data(), sf_count_t(x.size())) == sf_count_t(x.size()));
  sf_close(f);
}

// The mono mix of write_tone's channels, at 16 kHz.
inline double tone_mix(const Tone& t, int channels, int64_t i) {
  double scale = 0;
  for (int c = 0; c < channels; ++c) scale += double(1 + c) / channels;
  return t.at(double(i) / 16000.0) * scale / channels;
}

// Signal-to-error ratio in dB of got against want over [from, to).
inline double snr_db(const std::vector<float>& got, const std::vector<double>& want, size_t from, size_t to) {
  double s = 0, e = 0;
  for (size_t i = from; i < to; ++i) {
    s += want[i] * want[i];
    e += (got[i] - want[i]) * (got[i] - want[i]);
  }
  return 10 * std::log10(s / std::max(e, 1e-30));
}

// The whole of fd's input through AudioStream.
inline std::vector<float> stream_all(int fd, const RawAudio& raw = {}) {
  AudioStream in(fd, "-", raw);
  std::vector<float> all, chunk;
  while (in.read(chunk)) all.insert(all.end(), chunk.begin(), chunk.end());
  CHECK(in.samples_read() == int64_t(all.size()));
  return all;
}

// Writes bytes into a pipe in random pieces from another thread; returns the read end.
inline int pipe_of(const std::vector<uint8_t>& bytes, uint64_t seed, std::thread& writer) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  writer = std::thread([bytes, seed, w = fds[1]] {
    Rng rng(seed);
    for (size_t at = 0; at < bytes.size();) {
      const size_t n = std::min(bytes.size() - at, size_t(rng.integer(1, 3000)));
      if (write(w, bytes.data() + at, n) != ssize_t(n)) break;
      at += n;
    }
    close(w);
  });
  return fds[0];
}

}  // namespace lt::test
