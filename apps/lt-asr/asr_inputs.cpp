// One input through lt-asr: whole (read, then transcribe) or streamed
// (read as it arrives, phones printed as they settle, their latency measured).
#include "asr_inputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>

#include "lt.hpp"
#include "tool_error.h"

namespace lt::app {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The descriptor of path, "-" being stdin; closed when done.
struct Input {
  int fd;
  explicit Input(const std::string& path) : fd(path == "-" ? 0 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    check(fd >= 0, path + ": cannot open: " + std::strerror(errno));
  }
  ~Input() {
    if (fd > 0) ::close(fd);
  }
};

// A finished regular file that is not WAV (FLAC, OGG, AIFF, ...): the
// stream's reader parses WAV headers and raw PCM only, so libsndfile reads
// it whole and it is fed in pieces as if it arrived.
bool finished_other_format(const Input& input, const InputOptions& options) {
  struct stat st {};
  if (input.fd == 0 || options.follow > 0 || options.raw.sample_rate > 0) return false;
  if (::fstat(input.fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  char magic[4] = {};
  if (::pread(input.fd, magic, sizeof magic, 0) != ssize_t(sizeof magic)) return false;  // read_audio's error then
  return std::memcmp(magic, "RIFF", 4) != 0 && std::memcmp(magic, "RF64", 4) != 0;
}
}  // namespace

AsrResult transcribe_input(const std::string& path, lt_recognizer* recognizer, const InputOptions& options) {
  const auto t0 = Clock::now();
  std::vector<float> samples;
  if (path == "-") {
    const api::AudioReader in = api::new_audio_reader(0, path, options.raw);
    std::vector<float> chunk;
    while (api::next_samples(in.get(), chunk)) samples.insert(samples.end(), chunk.begin(), chunk.end());
    check(int64_t(samples.size()) >= LT_MIN_SPEECH_SAMPLES, "stdin: shorter than one 25 ms analysis frame");
  } else {
    samples = api::read_audio(path, options.raw);
  }
  const api::Transcript t = api::transcribe(recognizer, samples.data(), int64_t(samples.size()));
  AsrResult r;
  r.path = path;
  r.phones = tokens_of(t.get(), false);
  r.words = tokens_of(t.get(), true);
  r.duration = lt_transcript_seconds(t.get());
  r.times = lt_transcript_timings(t.get());
  r.wall = seconds(Clock::now() - t0);
  return r;
}

AsrResult stream_input(const std::string& path, lt_recognizer* recognizer, const InputOptions& options, AsrOutput& out) {
  const auto t0 = Clock::now();
  Input input(path);
  std::vector<float> whole;  // a finished file of another format, fed 0.1 s at a time
  size_t fed = 0;
  api::AudioReader in;
  if (finished_other_format(input, options))
    whole = api::read_audio(path);
  else
    in = api::new_audio_reader(input.fd, path, options.raw, options.follow);
  auto read = [&](std::vector<float>& chunk) {
    if (in) return api::next_samples(in.get(), chunk);
    const size_t n = std::min(whole.size() - fed, size_t(LT_SPEECH_SAMPLE_RATE / 10));
    chunk.assign(whole.begin() + std::ptrdiff_t(fed), whole.begin() + std::ptrdiff_t(fed + n));
    fed += n;
    return n > 0;
  };
  const api::Stream stream = api::new_stream(recognizer);
  AsrResult r;
  r.path = path;
  out.begin(path);
  int64_t pushed = 0;  // samples
  // When audio arrived: (seconds of audio after a read, its time).
  std::deque<std::pair<double, Clock::time_point>> arrivals;
  std::vector<float> chunk;
  auto hand_out = [&] {
    const api::Transcript settled = api::take_settled(stream.get());
    const std::vector<Token> fresh = tokens_of(settled.get(), false), fresh_words = tokens_of(settled.get(), true);
    const auto now = Clock::now();
    for (const Token& t : fresh) {
      // The read that brought the token's end.
      while (arrivals.size() > 1 && arrivals.front().first < t.end) arrivals.pop_front();
      const double latency = seconds(now - arrivals.front().second);
      r.latency_mean += latency;
      r.latency_max = std::max(r.latency_max, latency);
      ++r.latency_count;
    }
    // Reads before the best hypothesis's first unsettled phone are dropped,
    // so a long silence, which settles nothing, does not grow the queue (a
    // rival that wins later may end a phone earlier: its latency then counts
    // from a later read).
    const api::Transcript pending = api::tentative(stream.get());
    const std::vector<Token> tentative = tokens_of(pending.get(), false);
    const double unsettled = tentative.empty() ? double(pushed) / LT_SPEECH_SAMPLE_RATE : tentative.front().start;
    while (arrivals.size() > 1 && arrivals.front().first < unsettled) arrivals.pop_front();
    if (out.keeps_phones()) r.phones.insert(r.phones.end(), fresh.begin(), fresh.end());
    r.words.insert(r.words.end(), fresh_words.begin(), fresh_words.end());
    r.times = lt_transcript_timings(settled.get());
    // The line shows words with --words, else phones.
    if (out.words())
      out.update(texts(fresh_words), texts(tokens_of(pending.get(), true)));
    else
      out.update(texts(fresh), texts(tentative));
  };
  while (read(chunk)) {
    if (chunk.empty()) continue;
    const auto arrived = Clock::now();
    api::ok(lt_stream_push(stream.get(), chunk.data(), int64_t(chunk.size())));
    pushed += int64_t(chunk.size());
    arrivals.emplace_back(double(pushed) / LT_SPEECH_SAMPLE_RATE, arrived);
    hand_out();
  }
  check(pushed >= LT_MIN_SPEECH_SAMPLES, (path == "-" ? "stdin" : path) + ": shorter than one 25 ms analysis frame");
  arrivals.emplace_back(1e300, Clock::now());  // the end of the input completes the last phone
  api::ok(lt_stream_finish(stream.get()));
  hand_out();
  if (r.latency_count > 0) r.latency_mean /= double(r.latency_count);
  r.duration = double(pushed) / LT_SPEECH_SAMPLE_RATE;
  r.wall = seconds(Clock::now() - t0);
  return r;
}

}  // namespace lt::app
