// The audio readers on arbitrary bytes. Byte 0 picks the mode: 0 read_audio
// (libsndfile's formats), 1 read_audio as raw PCM, 2 AudioStream (a WAV
// stream), 3 AudioStream as raw PCM; for raw, byte 1 picks the rate,
// channels and sample format. The modes after them make what byte mutations
// seldom reach:
//   4  float samples, the rest as they are (most random floats are huge or
//      tiny), behind a float WAV header the harness writes: both readers;
//   5  a header of many chunks: the rest is one chunk (16 bytes at most),
//      repeated byte 1 times, or from byte 1 = 240 on 4096 - 247 + byte 1
//      times (across kMaxWavChunks: libsndfile takes up to 12 us a chunk,
//      so most inputs stay short), then the rest of a WAV after a
//      kFileSeparator: both readers;
//   6  AudioStream fed the rest through a pipe in pieces of random sizes
//      (byte 1 seeds them), against the same reader on the whole file.
// Whatever a reader returns is within [-1, 1] (clipped before the resampler
// and after it), and the front end's filterbank of it is finite.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <random>

#include "audio/audio_stream.h"
#include "fuzz_util.h"
#include "speech/speech_model.h"

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "harness: %s\n", what);
  std::abort();
}

void check_samples(const std::vector<float>& x) {
  for (float v : x)
    if (!(std::abs(v) <= 1.f)) finding("a reader returned a sample beyond +-1 or not finite");
  static const lt::SpeechFrontEnd frontend;
  for (float v : frontend.filterbank(x))
    if (!std::isfinite(v)) finding("the filterbank of what a reader returned is not finite");
}

std::vector<float> read_stream(int fd, const std::string& name, const lt::RawAudio& raw = {}) {
  lt::AudioStream in(fd, name, raw);
  std::vector<float> all, chunk;
  while (in.read(chunk)) all.insert(all.end(), chunk.begin(), chunk.end());
  return all;
}

std::vector<float> read_stream(const std::string& path, const lt::RawAudio& raw = {}) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) finding("cannot open the scratch file");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  return read_stream(fd, path, raw);
}

// Both readers on the file: each returns checked samples or an lt::Error naming it.
void read_both(const std::string& path, const lt::RawAudio& raw = {}) {
  lt::fuzz::expect_lt_error_only(path, [&] { check_samples(lt::read_audio(path, raw)); });
  lt::fuzz::expect_lt_error_only(path, [&] { check_samples(read_stream(path, raw)); });
}

void put_le32(std::vector<uint8_t>& b, uint32_t v) {
  for (int k = 0; k < 4; ++k) b.push_back(uint8_t(v >> (8 * k)));
}

// Mode 6: the bytes through a pipe, written in random pieces between reads
// (a non-blocking write end: a reader that stops early never blocks it).
void pieces_against_whole(const std::string& path, const std::vector<uint8_t>& bytes, unsigned seed) {
  std::vector<float> whole, pieces;
  std::string whole_error, pieces_error;
  try {
    whole = read_stream(path);
  } catch (const lt::Error& e) {
    whole_error = e.what();
  }
  int fds[2];
  if (pipe(fds) != 0 || fcntl(fds[1], F_SETFL, O_NONBLOCK) != 0) finding("cannot make a pipe");
  std::minstd_rand rng(seed);
  try {
    lt::AudioStream in(fds[0], path);
    std::vector<float> chunk;
    size_t at = 0;
    bool more = true;
    while (more) {
      if (at < bytes.size()) {
        const size_t n = std::min(bytes.size() - at, size_t(1 + rng() % 300));
        const ssize_t put = write(fds[1], bytes.data() + at, n);
        if (put > 0) at += size_t(put);
      }
      if (at == bytes.size() && fds[1] >= 0) close(fds[1]), fds[1] = -1;  // the end: the reader sees it
      more = in.read(chunk);
      pieces.insert(pieces.end(), chunk.begin(), chunk.end());
    }
  } catch (const lt::Error& e) {
    pieces_error = e.what();
  }
  close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
  if (whole_error.empty() != pieces_error.empty()) finding("in pieces and whole, the stream reader disagrees on failing");
  if (pieces.size() != whole.size() && whole_error.empty()) finding("in pieces, the stream reader gives another length");
  for (size_t i = 0; i < whole.size() && i < pieces.size(); ++i)
    if (std::abs(whole[i] - pieces[i]) > 1e-4f) finding("in pieces, the stream reader gives other samples");
  if (whole_error.empty()) check_samples(whole);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int mode = data[0] % 7;
  const int rates[4] = {8000, 16000, 22050, 44100};
  const lt::PcmFormat formats[5] = {lt::PcmFormat::s16le, lt::PcmFormat::s24le, lt::PcmFormat::s32le,
                                    lt::PcmFormat::f32le, lt::PcmFormat::u8};
  const lt::RawAudio raw{rates[data[1] % 4], 1 + (data[1] >> 2) % 2, formats[(data[1] >> 3) % 5]};
  const std::string path = lt::fuzz::scratch_dir() + "/input.audio";
  std::vector<uint8_t> bytes(data + 2, data + size);
  if (mode == 4) {
    std::vector<uint8_t> wav = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0, 3, 0};
    wav.insert(wav.end(), {uint8_t(raw.channels), 0});
    put_le32(wav, uint32_t(raw.sample_rate));
    put_le32(wav, uint32_t(raw.sample_rate * 4 * raw.channels));
    wav.insert(wav.end(), {uint8_t(4 * raw.channels), 0, 32, 0, 'd', 'a', 't', 'a'});
    put_le32(wav, uint32_t(bytes.size()));
    bytes.insert(bytes.begin(), wav.begin(), wav.end());
  } else if (mode == 5) {
    const std::vector<std::vector<uint8_t>> parts = lt::fuzz::split_files(bytes.data(), bytes.size(), 2);
    std::vector<uint8_t> unit(parts[0].begin(), parts[0].begin() + long(std::min<size_t>(parts[0].size(), 16)));
    if (unit.empty()) unit = {'j', 'u', 'n', 'k', 0, 0, 0, 0};
    bytes = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'};
    const int copies = data[1] < 240 ? data[1] : 4096 - 247 + data[1];
    for (int i = 0; i < copies; ++i) bytes.insert(bytes.end(), unit.begin(), unit.end());
    if (parts.size() > 1) bytes.insert(bytes.end(), parts[1].begin(), parts[1].end());
  }
  lt::fuzz::write_file(path, bytes.data(), bytes.size());
  switch (mode) {
    case 0:
    case 1:
      lt::fuzz::expect_lt_error_only(path, [&] { check_samples(lt::read_audio(path, mode == 1 ? raw : lt::RawAudio{})); });
      break;
    case 2:
    case 3:
      lt::fuzz::expect_lt_error_only(path, [&] { check_samples(read_stream(path, mode == 3 ? raw : lt::RawAudio{})); });
      break;
    case 4:
    case 5:
      read_both(path);
      break;
    default:
      pieces_against_whole(path, bytes, data[1]);
  }
  return 0;
}
