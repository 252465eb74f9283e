// lt.h's audio as a tool is handed it (lt-asr's inputs): raw PCM of a named
// layout read whole, and WAV or raw PCM read from a descriptor as it
// arrives, in pieces of any size. The reference is the test's own decoding of
// the bytes it wrote (16 kHz, so nothing is resampled); bad layouts and
// headers are one line.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "io/temp_dir.h"
#include "lt.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

void put_le(std::vector<uint8_t>& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

// frames x channels random int16 samples, and what a reader must give: each
// frame's channels averaged, x / 32768.
struct Pcm {
  std::vector<uint8_t> bytes;
  std::vector<float> mono;
};
Pcm random_s16(Rng& rng, int64_t frames, int channels) {
  Pcm p;
  for (int64_t f = 0; f < frames; ++f) {
    double sum = 0;
    for (int c = 0; c < channels; ++c) {
      const int16_t s = int16_t(rng.integer(-32768, 32767));
      put_le(p.bytes, uint16_t(s), 2);
      sum += s / 32768.0;
    }
    p.mono.push_back(float(sum / channels));
  }
  return p;
}

std::vector<uint8_t> wav_header(uint32_t data_bytes, int channels) {
  std::vector<uint8_t> h;
  for (char c : std::string("RIFF")) h.push_back(uint8_t(c));
  put_le(h, data_bytes + 36, 4);
  for (char c : std::string("WAVEfmt ")) h.push_back(uint8_t(c));
  put_le(h, 16, 4);
  put_le(h, 1, 2);  // PCM
  put_le(h, uint32_t(channels), 2);
  put_le(h, 16000, 4);
  put_le(h, uint32_t(16000 * 2 * channels), 4);
  put_le(h, uint32_t(2 * channels), 2);
  put_le(h, 16, 2);
  for (char c : std::string("data")) h.push_back(uint8_t(c));
  put_le(h, data_bytes, 4);
  return h;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - want[i])));
  CHECK(worst < 1e-6);
}

// Everything a reader on fd gives, and how many reads gave samples.
std::vector<float> read_all(int fd, const char* name, const lt_audio_format* format, int64_t* reads = nullptr) {
  lt_audio_reader* reader = nullptr;
  REQUIRE_MESSAGE(lt_audio_reader_new(fd, name, format, 0, &reader) == LT_OK, std::string(lt_last_error()));
  std::vector<float> all;
  int more = 1;
  while (more) {
    const float* samples = nullptr;
    int64_t count = -1;
    REQUIRE_MESSAGE(lt_audio_reader_read(reader, &samples, &count, &more) == LT_OK, std::string(lt_last_error()));
    REQUIRE(count >= 0);
    if (more == 0) CHECK(count == 0);
    if (reads && count > 0) ++*reads;
    all.insert(all.end(), samples, samples + count);
  }
  lt_audio_reader_free(reader);
  return all;
}

}  // namespace

TEST_CASE("lt_audio_read_format reads raw PCM of the layout it is given, channels averaged") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir dir;
  for (int channels : {1, 2, 3}) {
    const Pcm pcm = random_s16(rng, rng.integer(LT_MIN_SPEECH_SAMPLES, 5000), channels);
    const std::string path = dir.file("x" + std::to_string(channels) + ".raw");
    write_bytes(path, pcm.bytes);
    const lt_audio_format format{16000, channels, "s16le"};
    float* samples = nullptr;
    int64_t count = 0;
    REQUIRE_MESSAGE(lt_audio_read_format(path.c_str(), &format, &samples, &count) == LT_OK, std::string(lt_last_error()));
    check_close(std::vector<float>(samples, samples + count), pcm.mono);
    lt_audio_free(samples);
  }
  // f32le: the floats themselves.
  std::vector<float> floats(size_t(rng.integer(LT_MIN_SPEECH_SAMPLES, 3000)));
  std::vector<uint8_t> bytes(floats.size() * 4);
  for (float& f : floats) f = float(rng.uniform(-1, 1));
  std::memcpy(bytes.data(), floats.data(), bytes.size());
  const std::string path = dir.file("f.raw");
  write_bytes(path, bytes);
  const lt_audio_format f32{16000, 1, "f32le"};
  float* samples = nullptr;
  int64_t count = 0;
  REQUIRE(lt_audio_read_format(path.c_str(), &f32, &samples, &count) == LT_OK);
  CHECK(std::vector<float>(samples, samples + count) == floats);
  lt_audio_free(samples);
  // NULL and rate 0: a file with a header, as lt_audio_read.
  const lt_audio_format header = lt_audio_default_format();
  CHECK(header.sample_rate == 0);
  CHECK(lt_audio_read_format(path.c_str(), &header, &samples, &count) == LT_ERROR);
  CHECK(samples == nullptr);
  CHECK(lt_audio_read_format(path.c_str(), nullptr, &samples, &count) == LT_ERROR);
}

TEST_CASE("lt_audio_read_format refuses a layout that does not fit, in one line naming the file") {
  TempDir dir;
  const std::string path = dir.file("odd.raw");
  write_bytes(path, std::vector<uint8_t>(2001, 7));  // not whole s16le samples
  float* samples = nullptr;
  int64_t count = 0;
  const lt_audio_format s16{16000, 1, "s16le"};
  CHECK(lt_audio_read_format(path.c_str(), &s16, &samples, &count) == LT_ERROR);
  std::string error = lt_last_error();
  CHECK(error.find(path) != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
  const lt_audio_format bad{16000, 1, "s17le"};
  CHECK(lt_audio_read_format(path.c_str(), &bad, &samples, &count) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("s17le") != std::string::npos);
  const lt_audio_format no_channels{16000, 0, "s16le"};
  CHECK(lt_audio_read_format(path.c_str(), &no_channels, &samples, &count) == LT_ERROR_ARGUMENT);
  const lt_audio_format no_sample{16000, 1, nullptr};
  CHECK(lt_audio_read_format(path.c_str(), &no_sample, &samples, &count) == LT_ERROR_ARGUMENT);
  CHECK(lt_audio_read_format(nullptr, &s16, &samples, &count) == LT_ERROR_ARGUMENT);
  CHECK(samples == nullptr);
}

TEST_CASE("lt_audio_reader gives a WAV written into a pipe in random pieces, sample for sample") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int channels : {1, 2}) {
    const Pcm pcm = random_s16(rng, rng.integer(4000, 40000), channels);
    std::vector<uint8_t> bytes = wav_header(uint32_t(pcm.bytes.size()), channels);
    bytes.insert(bytes.end(), pcm.bytes.begin(), pcm.bytes.end());
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::vector<size_t> cuts;  // the writer's pieces: 1 byte to 3000
    for (size_t at = 0; at < bytes.size();) cuts.push_back(at), at += size_t(rng.integer(1, 3000));
    std::thread writer([&] {
      for (size_t i = 0; i < cuts.size(); ++i) {
        const size_t end = i + 1 < cuts.size() ? cuts[i + 1] : bytes.size();
        for (size_t at = cuts[i]; at < end;) {
          const ssize_t n = write(fds[1], bytes.data() + at, end - at);
          if (n <= 0) break;
          at += size_t(n);
        }
        if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      close(fds[1]);
    });
    int64_t reads = 0;
    const std::vector<float> got = read_all(fds[0], "pipe", nullptr, &reads);
    writer.join();
    close(fds[0]);
    check_close(got, pcm.mono);
    CHECK(reads >= 1);
  }
}

TEST_CASE("lt_audio_reader reads raw PCM from a descriptor, and refuses a bad header in one line naming it") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir dir;
  const Pcm pcm = random_s16(rng, rng.integer(1000, 20000), 2);
  const std::string path = dir.file("x.raw");
  write_bytes(path, pcm.bytes);
  FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  const lt_audio_format raw{16000, 2, "s16le"};
  check_close(read_all(fileno(f), path.c_str(), &raw), pcm.mono);
  std::fclose(f);

  const std::string bad = dir.file("bad.wav");
  std::vector<uint8_t> bytes = random_bytes(rng, 2000);  // no RIFF header, and no raw layout given
  bytes[0] = 'X';
  write_bytes(bad, bytes);
  f = std::fopen(bad.c_str(), "rb");
  REQUIRE(f != nullptr);
  lt_audio_reader* reader = nullptr;
  lt_status status = lt_audio_reader_new(fileno(f), "bad.wav", nullptr, 0, &reader);
  int more = 1;
  int64_t count = 0;
  const float* samples = nullptr;
  while (status == LT_OK && more) status = lt_audio_reader_read(reader, &samples, &count, &more);
  CHECK(status == LT_ERROR);
  CHECK(std::string(lt_last_error()).rfind("bad.wav", 0) == 0);
  CHECK(std::string(lt_last_error()).find('\n') == std::string::npos);
  lt_audio_reader_free(reader);
  std::fclose(f);
  CHECK(lt_audio_reader_new(-1, "x", nullptr, 0, &reader) == LT_ERROR_ARGUMENT);
  CHECK(reader == nullptr);
  CHECK(lt_audio_reader_new(0, nullptr, nullptr, 0, &reader) == LT_ERROR_ARGUMENT);
  CHECK(lt_audio_reader_read(nullptr, &samples, &count, &more) == LT_ERROR_ARGUMENT);
  lt_audio_reader_free(nullptr);
}
