// Codecs: libsndfile's encoders and decoders over a buffer in memory (its
// virtual I/O), then the decoded signal aligned with the input, since MP3
// and Opus decoders add a delay of their own.
#include <sndfile.h>

#include <algorithm>
#include <cstring>

#include "audio/audio_file.h"
#include "audio/augment.h"
#include "audio/fft_convolve.h"
#include "audio/resampler.h"
#include "common/error.h"

namespace lt::audio {

namespace {
struct Memory {
  std::vector<unsigned char> bytes;
  sf_count_t at = 0;
};

sf_count_t length(void* m) { return sf_count_t(static_cast<Memory*>(m)->bytes.size()); }
sf_count_t seek(sf_count_t offset, int whence, void* p) {
  auto* m = static_cast<Memory*>(p);
  const sf_count_t base = whence == SEEK_CUR ? m->at : whence == SEEK_END ? sf_count_t(m->bytes.size()) : 0;
  m->at = std::max<sf_count_t>(0, base + offset);
  return m->at;
}
sf_count_t read(void* out, sf_count_t n, void* p) {
  auto* m = static_cast<Memory*>(p);
  const sf_count_t size = sf_count_t(m->bytes.size()), k = std::max<sf_count_t>(0, std::min(n, size - m->at));
  if (k > 0) std::memcpy(out, m->bytes.data() + m->at, size_t(k));
  m->at += k;
  return k;
}
sf_count_t write(const void* in, sf_count_t n, void* p) {
  auto* m = static_cast<Memory*>(p);
  if (size_t(m->at + n) > m->bytes.size()) m->bytes.resize(size_t(m->at + n));
  std::memcpy(m->bytes.data() + m->at, in, size_t(n));
  m->at += n;
  return n;
}
sf_count_t tell(void* m) { return static_cast<Memory*>(m)->at; }

std::vector<float> encode_decode(const std::vector<float>& x, int format, int rate, const char* name) {
  SF_VIRTUAL_IO io{length, seek, read, write, tell};
  Memory memory;
  SF_INFO info{};
  info.samplerate = rate, info.channels = 1, info.format = format;
  SNDFILE* out = sf_open_virtual(&io, SFM_WRITE, &info, &memory);
  check(out != nullptr, std::string(name) + " encoder: " + sf_strerror(nullptr));
  // The lowest bit rate each offers: a codec heard at its worst.
  double lowest = 1.0;
  sf_command(out, SFC_SET_COMPRESSION_LEVEL, &lowest, sizeof lowest);
  const sf_count_t written = sf_write_float(out, x.data(), sf_count_t(x.size()));
  const std::string error = sf_strerror(out);
  sf_close(out);
  check(written == sf_count_t(x.size()), std::string(name) + " encoder: " + error);
  memory.at = 0;
  SF_INFO in_info{};
  SNDFILE* in = sf_open_virtual(&io, SFM_READ, &in_info, &memory);
  check(in != nullptr, std::string(name) + " decoder: " + sf_strerror(nullptr));
  std::vector<float> y(size_t(std::max<sf_count_t>(in_info.frames, 0)) + 8192);
  const sf_count_t got = sf_read_float(in, y.data(), sf_count_t(y.size()));
  sf_close(in);
  y.resize(size_t(std::max<sf_count_t>(got, 0)));
  return y;
}

// y shifted by the lag (0..max_lag) at which it best matches x, cut or padded to x's length.
std::vector<float> aligned(const std::vector<float>& x, const std::vector<float>& y, size_t max_lag) {
  std::vector<float> reversed(x.rbegin(), x.rend());
  const std::vector<float> c = fft_convolve(reversed.data(), reversed.size(), y.data(), y.size());
  size_t best = 0;
  for (size_t lag = 0; lag <= max_lag && x.size() - 1 + lag < c.size(); ++lag)
    if (c[x.size() - 1 + lag] > c[x.size() - 1 + best]) best = lag;
  std::vector<float> out(x.size(), 0.f);
  for (size_t i = 0; i < x.size() && i + best < y.size(); ++i) out[i] = y[i + best];
  return out;
}
}  // namespace

std::vector<float> codec_round_trip(const std::vector<float>& x, Codec codec) {
  if (x.empty()) return x;
  switch (codec) {
    case Codec::gsm: {  // GSM 6.10 is an 8 kHz codec
      const std::vector<float> narrow = resample(x, kSpeechSampleRate, 8000);
      std::vector<float> y = resample(encode_decode(narrow, SF_FORMAT_WAV | SF_FORMAT_GSM610, 8000, "GSM 6.10"), 8000,
                                      kSpeechSampleRate);
      return aligned(x, y, 2048);
    }
    case Codec::mp3:
      return aligned(x, encode_decode(x, SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, kSpeechSampleRate, "MP3"), 4096);
    case Codec::opus:
      return aligned(x, encode_decode(x, SF_FORMAT_OGG | SF_FORMAT_OPUS, kSpeechSampleRate, "Opus"), 4096);
  }
  return x;
}

}  // namespace lt::audio
