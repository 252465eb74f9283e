// Whole audio files through libsndfile (raw PCM too), averaged to mono and
// resampled to 16 kHz.
#include <sndfile.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "audio/audio_file.h"
#include "audio/pcm.h"
#include "audio/resampler.h"
#include "audio/wav_header.h"
#include "common/error.h"

namespace lt {

PcmFormat parse_pcm_format(const std::string& name) {
  if (name == "s16le") return PcmFormat::s16le;
  if (name == "s24le") return PcmFormat::s24le;
  if (name == "s32le") return PcmFormat::s32le;
  if (name == "f32le") return PcmFormat::f32le;
  if (name == "u8") return PcmFormat::u8;
  throw Error("raw sample format '" + name + "': expected s16le, s24le, s32le, f32le or u8");
}

int pcm_bytes(PcmFormat format) {
  return format == PcmFormat::u8 ? 1 : format == PcmFormat::s16le ? 2 : format == PcmFormat::s24le ? 3 : 4;
}

namespace audio {

void append_mono(const uint8_t* p, int64_t frames, int channels, PcmFormat f, const std::string& name,
                 int64_t first_sample, std::vector<float>& out) {
  const int bytes = pcm_bytes(f);
  for (int64_t i = 0; i < frames; ++i) {
    float sum = 0;
    for (int c = 0; c < channels; ++c) {
      sum += checked_sample(pcm_sample(p + (i * channels + c) * bytes, f), name, (first_sample + i) * channels + c);
    }
    out.push_back(sum / float(channels));
  }
}

}  // namespace audio

namespace {

struct SndFile {
  SNDFILE* f = nullptr;
  ~SndFile() {
    if (f) sf_close(f);
  }
};

// A WAV file's header goes through the stream's walker first, so that both
// readers bound it alike (libsndfile would walk any number of chunks).
void check_wav_header(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) return;  // libsndfile says why
  std::vector<uint8_t> piece(65536);
  size_t n = std::fread(piece.data(), 1, 12, f.get());
  if (n < 12 || std::memcmp(piece.data(), "RIFF", 4) != 0 || std::memcmp(piece.data() + 8, "WAVE", 4) != 0) return;
  audio::WavHeader header(path);
  do header.feed(piece.data(), n);
  while (!header.done() && (n = std::fread(piece.data(), 1, piece.size(), f.get())) > 0);
}

int raw_subtype(PcmFormat f) {
  switch (f) {
    case PcmFormat::u8:
      return SF_FORMAT_PCM_U8;
    case PcmFormat::s16le:
      return SF_FORMAT_PCM_16;
    case PcmFormat::s24le:
      return SF_FORMAT_PCM_24;
    case PcmFormat::s32le:
      return SF_FORMAT_PCM_32;
    case PcmFormat::f32le:
      return SF_FORMAT_FLOAT;
  }
  return 0;
}

}  // namespace

std::vector<float> read_audio(const std::string& path, const RawAudio& raw) {
  struct stat st;
  check(stat(path.c_str(), &st) == 0, path + ": cannot open (no such file or not readable)");
  check(!S_ISDIR(st.st_mode), path + ": is a folder, not an audio file");
  SF_INFO info{};
  if (raw.sample_rate > 0) {
    check(raw.channels >= 1 && raw.channels <= 64, path + ": raw audio needs 1 to 64 channels, not " +
                                                       std::to_string(raw.channels));
    const int64_t frame = int64_t(raw.channels) * pcm_bytes(raw.format);
    check(st.st_size % frame == 0, path + ": " + std::to_string(st.st_size) + " bytes are not whole frames of " +
                                       std::to_string(raw.channels) + " channel(s) x " +
                                       std::to_string(pcm_bytes(raw.format)) + " bytes: wrong raw flags?");
    info.samplerate = raw.sample_rate;
    info.channels = raw.channels;
    info.format = SF_FORMAT_RAW | raw_subtype(raw.format) | SF_ENDIAN_LITTLE;
  } else {
    check_wav_header(path);
  }
  SndFile file;
  file.f = sf_open(path.c_str(), SFM_READ, &info);
  check(file.f != nullptr, path + ": not audio libsndfile can read (" + sf_strerror(nullptr) + ")");
  check(info.frames > 0, path + ": holds no audio samples");
  check(info.channels >= 1 && info.channels <= 64 && info.samplerate > 0,
        path + ": " + std::to_string(info.channels) + " channels at " + std::to_string(info.samplerate) +
            " Hz: not audio lt can use");
  // Decoded in pieces as the samples come, so that memory follows the audio
  // actually there, not what a header claims.
  constexpr sf_count_t kPiece = 16384;
  constexpr int64_t kMaxSamples = int64_t(1) << 31;  // 37 hours at 16 kHz
  std::vector<float> piece(size_t(kPiece * info.channels)), mono;
  for (;;) {
    const sf_count_t got = sf_readf_float(file.f, piece.data(), kPiece);
    if (got <= 0) break;
    const int64_t first = int64_t(mono.size());
    for (sf_count_t i = 0; i < got; ++i) {
      float sum = 0;
      for (int c = 0; c < info.channels; ++c) {
        sum += audio::checked_sample(piece[size_t(i * info.channels + c)], path, (first + i) * info.channels + c);
      }
      mono.push_back(sum / float(info.channels));
    }
    check(int64_t(mono.size()) <= kMaxSamples, path + ": longer than the 2^31 samples lt reads");
  }
  check(!mono.empty(), path + ": cannot decode its samples (" + sf_strerror(file.f) + ")");
  std::vector<float> out;
  out.reserve(size_t(double(mono.size()) * kSpeechSampleRate / info.samplerate) + 16);
  audio::Resampler resampler(info.samplerate, path);
  resampler.process(mono.data(), mono.size(), out);
  resampler.flush(out);
  check(int64_t(out.size()) >= kMinSpeechSamples,
        path + ": " + std::to_string(out.size()) + " samples at 16 kHz, shorter than one 25 ms frame (" +
            std::to_string(kMinSpeechSamples) + ")");
  return out;
}

}  // namespace lt
