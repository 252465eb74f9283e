// Hostile audio (issue 36): WAV headers of millions of chunks, walked once
// and bounded in both readers; float samples far beyond full scale, refused
// alike by both readers, those a little beyond it clipped, and the
// resampler's ringing clipped.
#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include "audio/audio_files.h"
#include "audio/wav_header.h"
#include "io/temp_dir.h"
#include "speech/speech_model.h"

using namespace lt;
using namespace lt::test;

namespace {

void put_le32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 0; s < 32; s += 8) out.push_back(uint8_t(v >> s));
}

// A 16 kHz mono WAV: `chunks` empty unknown chunks, then fmt (PCM 16-bit or
// float), then the samples as its data.
std::vector<uint8_t> wav_bytes(const std::vector<float>& x, bool float_samples, size_t chunks) {
  std::vector<uint8_t> out = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
  out.reserve(12 + 8 * chunks + 24 + 8 + 4 * x.size());
  for (size_t i = 0; i < chunks; ++i) out.insert(out.end(), {'j', 'u', 'n', 'k', 0, 0, 0, 0});
  const uint16_t bytes = float_samples ? 4 : 2;
  out.insert(out.end(), {'f', 'm', 't', ' ', 16, 0, 0, 0, uint8_t(float_samples ? 3 : 1), 0, 1, 0});
  put_le32(out, 16000);
  put_le32(out, 16000u * bytes);
  out.insert(out.end(), {uint8_t(bytes), 0, uint8_t(8 * bytes), 0, 'd', 'a', 't', 'a'});
  put_le32(out, uint32_t(x.size() * bytes));
  for (float v : x) {
    uint32_t bits;
    if (float_samples) std::memcpy(&bits, &v, 4);
    else bits = uint32_t(int32_t(std::lround(std::clamp(v, -1.f, 1.f) * 32767)));
    for (int s = 0; s < 8 * bytes; s += 8) out.push_back(uint8_t(bits >> s));
  }
  return out;
}

std::vector<float> stream_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  AudioStream in(fd, path);
  std::vector<float> all, chunk;
  try {
    while (in.read(chunk)) all.insert(all.end(), chunk.begin(), chunk.end());
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return all;
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void check_error(const std::string& msg, const std::string& path, const std::string& want) {
  INFO(msg);
  CHECK(msg.rfind(path + ": ", 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(msg.find(want) != std::string::npos);
}

}  // namespace

TEST_CASE("a WAV header of 2.5 million chunks (20 MB) is refused by both readers in well under a second") {
  TempDir tmp;
  const std::string path = tmp.file("flood.wav");
  write_bytes(path, wav_bytes(std::vector<float>(1600, 0.25f), false, 2'500'000));
  // The stream reader walked every chunk again on each 16 KB read: 17.5 s.
  std::string streamed, whole;
  const double stream_s = seconds_of([&] { streamed = error_of([&] { stream_file(path); }); });
  const double whole_s = seconds_of([&] { whole = error_of([&] { read_audio(path); }); });
  INFO("stream " << stream_s << " s, whole file " << whole_s << " s");
  for (const std::string& msg : {streamed, whole}) check_error(msg, path, "a WAV header of more than 4096 chunks");
  CHECK(stream_s < 1.0);
  CHECK(whole_s < 1.0);
}

TEST_CASE("a WAV header within its bounds reads as the plain file, whole, streamed or in pieces, and past them it is refused") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::vector<float> x = rng.normals(4000, 0.2);
  const std::string plain = tmp.file("plain.wav"), many = tmp.file("many.wav");
  write_bytes(plain, wav_bytes(x, false, 0));
  const std::vector<float> want = read_audio(plain);
  REQUIRE(want.size() == x.size());
  // A big chunk takes the header before data to the byte bound (RIFF 12, its
  // own 8, the empty chunks' 8 each, fmt 24), or 2 bytes past it; the empty
  // chunks take it to the chunk bound, or one past it.
  const size_t fill = size_t(audio::kMaxWavHeaderBytes) - 8 * size_t(audio::kMaxWavChunks) - 28;
  for (const int over : {0, 1, 2}) {
    std::vector<uint8_t> bytes = wav_bytes(x, false, size_t(audio::kMaxWavChunks) - 2 + (over == 1));
    std::vector<uint8_t> big = {'b', 'i', 'g', ' '};
    put_le32(big, uint32_t(fill + (over == 2) * 2));
    big.resize(big.size() + fill + (over == 2) * 2);
    bytes.insert(bytes.begin() + 12, big.begin(), big.end());
    write_bytes(many, bytes);
    INFO("over " << over);
    if (over) {
      check_error(error_of([&] { read_audio(many); }), many, "before the data chunk");
      check_error(error_of([&] { stream_file(many); }), many, "before the data chunk");
      continue;
    }
    CHECK(read_audio(many) == want);
    CHECK(stream_file(many) == want);
    std::thread writer;
    const int fd = pipe_of(bytes, seed, writer);
    CHECK(stream_all(fd) == want);
    writer.join();
    close(fd);
  }
}

TEST_CASE("the header walker takes any cut of its bytes alike and stops at the data chunk") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  std::vector<uint8_t> bytes = wav_bytes(std::vector<float>(10, 0.5f), true, size_t(rng.integer(0, 50)));
  // An odd-sized unknown chunk (word-aligned: one byte of padding) before the data.
  const std::vector<uint8_t> odd = {'L', 'I', 'S', 'T', 3, 0, 0, 0, 'a', 'b', 'c', 0};
  const size_t data_at = bytes.size() - 8 - 40;
  bytes.insert(bytes.begin() + long(data_at), odd.begin(), odd.end());
  audio::WavHeader header("x.wav");
  size_t at = 0;
  while (!header.done()) {
    REQUIRE(at < bytes.size());
    const size_t n = std::min(bytes.size() - at, size_t(rng.integer(1, 9)));
    at += header.feed(bytes.data() + at, n);
  }
  CHECK(at == data_at + odd.size() + 8);
  CHECK(header.data_bytes() == 40);
  const RawAudio f = header.pcm_format();
  CHECK(f.sample_rate == 16000);
  CHECK(f.channels == 1);
  CHECK(f.format == PcmFormat::f32le);
}

TEST_CASE("float samples: within +-1 as they are, up to +-2 clipped, beyond, NaN or infinite one line naming the file") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  // At 16 kHz nothing is resampled: what both readers give is the clipped input itself.
  std::vector<float> x(3000);
  for (float& v : x) v = float(rng.uniform(-2, 2));
  std::vector<float> want = x;
  for (float& v : want) v = std::clamp(v, -1.f, 1.f);
  const std::string hot = tmp.file("hot.wav");
  write_bytes(hot, wav_bytes(x, true, 0));
  CHECK(read_audio(hot) == want);
  CHECK(stream_file(hot) == want);
  // Sharp edges at other rates, where the resampler's filter rings past full
  // scale (to 2.03 on a sawtooth of 8-bit samples at 8 kHz that fuzz_audio
  // found): both readers return samples within [-1, 1], the filterbank finite.
  for (float& v : x) v = rng.uniform() < 0 ? -2.f : 2.f;
  const std::string square = tmp.file("square.wav"), saw = tmp.file("saw.raw");
  write_float_wav(square, x, 44100);
  std::vector<uint8_t> bytes(4000);
  const int step = int(rng.integer(20, 60));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * size_t(step));
  write_bytes(saw, bytes);
  const RawAudio saw_8k{8000, 1, PcmFormat::u8};
  std::thread writer;
  const int fd = pipe_of(bytes, seed, writer);
  for (const std::vector<float>& read : {read_audio(square), stream_file(square), read_audio(saw, saw_8k),
                                         stream_all(fd, saw_8k)}) {
    CHECK(read.size() > 400);
    CHECK(std::all_of(read.begin(), read.end(), [](float v) { return v >= -1.f && v <= 1.f; }));
    const std::vector<float> frames = SpeechFrontEnd().filterbank(read);
    CHECK(std::all_of(frames.begin(), frames.end(), [](float v) { return std::isfinite(v); }));
  }
  writer.join();
  close(fd);
  // Beyond the bound: the sample's index and value, before any resampling.
  const size_t at = size_t(rng.integer(0, int64_t(x.size()) - 1));
  for (const float bad : {3e38f, -3e38f, 2.001f, -1e10f, INFINITY, NAN}) {
    for (float& v : x) v = float(rng.uniform(-0.5, 0.5));
    x[at] = bad;
    for (const int rate : {16000, 22050}) {
      const std::string path = tmp.file("bad" + std::to_string(rate) + ".wav");
      write_float_wav(path, x, rate);
      INFO(bad << " at " << rate << " Hz");
      const std::string why = "sample " + std::to_string(at) + " is ";
      check_error(error_of([&] { read_audio(path); }), path, why);
      check_error(error_of([&] { stream_file(path); }), path, why);
    }
  }
}
