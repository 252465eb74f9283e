// Reading audio: files in several formats, rates and channel counts that the
// test writes through libsndfile, against the analytic signal at 16 kHz; the
// stream reader through a pipe against the file reader; and one line naming
// the file for every kind of bad input.
#include <fcntl.h>

#include "audio/audio_files.h"
#include "audio/audio_stream.h"
#include "io/temp_dir.h"

using namespace lt;
using namespace lt::test;

namespace {

void check_one_line(const std::string& msg, const std::string& path, const std::string& want) {
  INFO(msg);
  CHECK(msg.rfind(path, 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(msg.find(want) != std::string::npos);
}

}  // namespace

TEST_CASE("read_audio: WAV, FLAC, OGG/Vorbis, AIFF and float WAV at any rate and channel count give the tone at 16 kHz mono") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  struct Case {
    const char* name;
    int format, rate, channels;
    double min_snr;  // lossless formats are limited by 16-bit rounding and the resampler; Vorbis is lossy
  };
  const Case cases[] = {{"a.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 44100, 2, 60},
                        {"b.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 22050, 1, 60},
                        {"c.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 48000, 2, 20},
                        {"d.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_24, 8000, 1, 60},
                        {"e.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 3, 100}};
  for (const Case& c : cases) {
    INFO(c.name);
    const Tone tone{rng.uniform(200, 0.4 * std::min(c.rate, 16000)), rng.uniform(0, 6.28), 0.5};
    const std::string path = tmp.file(c.name);
    write_tone(path, c.format, c.rate, c.channels, 0.5, tone);
    const std::vector<float> got = read_audio(path);
    CHECK(std::abs(int64_t(got.size()) - 8000) <= 2);
    std::vector<double> want(got.size());
    for (size_t i = 0; i < got.size(); ++i) want[i] = tone_mix(tone, c.channels, int64_t(i));
    // Away from the edges, where the resampler's filter sees the signal start and stop.
    CHECK(snr_db(got, want, 400, got.size() - 400) > c.min_snr);
  }
}

TEST_CASE("read_audio: raw PCM with its rate, channels and sample format") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const Tone tone{rng.uniform(300, 3000), rng.uniform(0, 6.28), 0.6};
  std::vector<uint8_t> bytes;
  for (int64_t i = 0; i < 16000; ++i)  // 2 channels of s16le at 32 kHz: 0.5 s
    for (int c = 0; c < 2; ++c) {
      const int16_t v = int16_t(std::lround(tone.at(double(i) / 32000) * (1 + c) / 2 * 32767));
      bytes.push_back(uint8_t(v & 0xff));
      bytes.push_back(uint8_t(uint16_t(v) >> 8));
    }
  const std::string path = tmp.file("x.raw");
  write_bytes(path, bytes);
  const std::vector<float> got = read_audio(path, {32000, 2, PcmFormat::s16le});
  std::vector<double> want(got.size());
  for (size_t i = 0; i < got.size(); ++i) want[i] = tone_mix(tone, 2, int64_t(i));
  CHECK(snr_db(got, want, 400, got.size() - 400) > 60);
  check_one_line(error_of([&] { read_audio(path, {32000, 3, PcmFormat::s16le}); }), path, "not whole frames");
  CHECK(parse_pcm_format("f32le") == PcmFormat::f32le);
  CHECK(error_of([&] { parse_pcm_format("mp3"); }).find("s16le") != std::string::npos);
}

TEST_CASE("AudioStream through a pipe in random pieces equals read_audio of the same file") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  for (auto [rate, channels, format] : {std::tuple{16000, 1, SF_FORMAT_PCM_16}, {44100, 2, SF_FORMAT_PCM_16},
                                       {22050, 1, SF_FORMAT_FLOAT}, {48000, 2, SF_FORMAT_PCM_24}}) {
    INFO(rate << " Hz, " << channels << " channels");
    const std::string path = tmp.file("s.wav");
    write_tone(path, SF_FORMAT_WAV | format, rate, channels, 0.3, {rng.uniform(100, 4000), rng.uniform(0, 6), 0.7});
    const std::vector<float> want = read_audio(path);
    std::thread writer;
    const int fd = pipe_of(read_bytes(path), seed, writer);
    const std::vector<float> got = stream_all(fd);
    writer.join();
    close(fd);
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - want[i])));
    CHECK(worst < (rate == 16000 ? 1e-7 : 1e-5));
  }
  SUBCASE("raw PCM on a pipe") {
    std::vector<uint8_t> bytes;
    std::vector<float> want;
    for (int i = 0; i < 1000; ++i) {
      const int16_t v = int16_t(rng.integer(-20000, 20000));
      bytes.push_back(uint8_t(v & 0xff));
      bytes.push_back(uint8_t(uint16_t(v) >> 8));
      want.push_back(float(v) / 32768.f);
    }
    std::thread writer;
    const int fd = pipe_of(bytes, seed, writer);
    CHECK(stream_all(fd, {16000, 1, PcmFormat::s16le}) == want);
    writer.join();
    close(fd);
  }
}

TEST_CASE("bad audio is one line naming the file and the problem") {
  TempDir tmp;
  const std::string missing = tmp.file("missing.wav");
  check_one_line(error_of([&] { read_audio(missing); }), missing, "cannot open");
  const std::string text = tmp.file("text.wav");
  write_bytes(text, std::vector<uint8_t>(500, 'a'));
  check_one_line(error_of([&] { read_audio(text); }), text, "not audio");
  const std::string empty = tmp.file("empty.wav");
  write_tone(empty, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 0, {440, 0, 0.5});
  check_one_line(error_of([&] { read_audio(empty); }), empty, "no audio samples");
  const std::string zero = tmp.file("zero.wav");
  write_bytes(zero, {});
  check_one_line(error_of([&] { read_audio(zero); }), zero, "not audio");
  const std::string short_one = tmp.file("short.wav");
  write_tone(short_one, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 0.01, {440, 0, 0.5});
  check_one_line(error_of([&] { read_audio(short_one); }), short_one, "shorter than one 25 ms frame");
  // A float WAV holding a NaN (libsndfile writes the bits as given).
  const std::string nan_file = tmp.file("nan.wav");
  {
    std::vector<float> x(1000, 0.1f);
    x[700] = std::nanf("");
    write_float_wav(nan_file, x);
  }
  check_one_line(error_of([&] { read_audio(nan_file); }), nan_file, "sample 700 is NaN");
  // A WAV whose codec libsndfile does not decode (format tag 0x55, MPEG layer 3).
  const std::string mp3 = tmp.file("mp3.wav");
  std::vector<uint8_t> wav = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0,
                              0x55, 0, 1, 0, 0x80, 0x3e, 0, 0, 0, 0x7d, 0, 0, 2, 0, 16, 0, 'd', 'a', 't', 'a',
                              0xe8, 3, 0, 0};
  wav.resize(wav.size() + 1000, 1);
  write_bytes(mp3, wav);
  check_one_line(error_of([&] { read_audio(mp3); }), mp3, "not audio");
  SUBCASE("streams") {
    auto stream_error = [&](const std::vector<uint8_t>& bytes, const RawAudio& raw = {}) {
      std::thread writer;
      const int fd = pipe_of(bytes, 1, writer);
      const std::string msg = error_of([&] { stream_all(fd, raw); });
      writer.join();
      close(fd);
      return msg;
    };
    check_one_line(stream_error({}), "stdin", "no audio (empty input)");
    check_one_line(stream_error(std::vector<uint8_t>(100, 'x')), "stdin", "not a WAV stream");
    check_one_line(stream_error(std::vector<uint8_t>(wav.begin(), wav.begin() + 20)), "stdin", "ends inside its WAV header");
    check_one_line(stream_error(wav), "stdin", "unsupported WAV encoding");
    check_one_line(stream_error(std::vector<uint8_t>(1001, 1), {16000, 1, PcmFormat::s16le}), "stdin", "not a whole frame");
  }
}
