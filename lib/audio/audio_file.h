// Audio files in any format libsndfile reads and raw PCM, always as mono
// float samples in [-1, 1] at 16 kHz, the rate of lt's speech models
// (audio_stream.h reads audio that arrives in pieces).
//
//   std::vector<float> x = lt::read_audio("utt.flac");                // any rate, any channels
//   std::vector<float> y = lt::read_audio("utt.raw", {8000, 2, lt::PcmFormat::s16le});
//
// Channels are averaged; other rates go through libsoxr's high-quality
// resampler. Every failure is one lt::Error line naming the file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lt {

constexpr int kSpeechSampleRate = 16000;
// The shortest audio lt reads: one 25 ms analysis frame at 16 kHz.
constexpr int64_t kMinSpeechSamples = 400;
// Float samples past full scale (+-1) up to this are clipped to +-1; larger
// ones, NaN and infinities are an error naming the file and the sample. The
// resampler's output is clipped to +-1 too: what the readers return is
// always within [-1, 1].
constexpr float kMaxSampleMagnitude = 2.f;

enum class PcmFormat { s16le, s24le, s32le, f32le, u8 };
// Raw PCM's layout; sample_rate 0 means the input is not raw.
struct RawAudio {
  int sample_rate = 0;
  int channels = 1;
  PcmFormat format = PcmFormat::s16le;
};
// "s16le", "s24le", "s32le", "f32le" or "u8"; lt::Error for anything else.
PcmFormat parse_pcm_format(const std::string& name);
int pcm_bytes(PcmFormat format);

// The whole file, mono at 16 kHz. Errors: unreadable, not audio, an
// unsupported codec, raw flags that do not divide the size, no samples or
// fewer than kMinSpeechSamples, a sample beyond kMaxSampleMagnitude.
std::vector<float> read_audio(const std::string& path, const RawAudio& raw = {});

}  // namespace lt
