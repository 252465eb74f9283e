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

#include "lt/error.h"

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

AsrResult transcribe_input(const std::string& path, SpeechRecognizer& recognizer, const InputOptions& options) {
  const auto t0 = Clock::now();
  std::vector<float> samples;
  if (path == "-") {
    AudioStream in(0, path, options.raw);
    std::vector<float> chunk;
    while (in.read(chunk)) samples.insert(samples.end(), chunk.begin(), chunk.end());
    check(int64_t(samples.size()) >= kMinSpeechSamples, "stdin: shorter than one 25 ms analysis frame");
  } else {
    samples = read_audio(path, options.raw);
  }
  const Transcript t = recognizer.transcribe(samples);
  AsrResult r;
  r.path = path;
  r.phones = t.phones;
  r.words = t.words;
  r.duration = t.duration;
  r.times = t.times;
  r.wall = seconds(Clock::now() - t0);
  return r;
}

AsrResult stream_input(const std::string& path, SpeechModel& model, const InputOptions& options, AsrOutput& out) {
  const auto t0 = Clock::now();
  Input input(path);
  std::vector<float> whole;  // a finished file of another format, fed 0.1 s at a time
  size_t fed = 0;
  std::unique_ptr<AudioStream> in;
  if (finished_other_format(input, options))
    whole = read_audio(path);
  else
    in = std::make_unique<AudioStream>(input.fd, path, options.raw, options.follow);
  auto read = [&](std::vector<float>& chunk) {
    if (in) return in->read(chunk);
    const size_t n = std::min(whole.size() - fed, size_t(kSpeechSampleRate / 10));
    chunk.assign(whole.begin() + std::ptrdiff_t(fed), whole.begin() + std::ptrdiff_t(fed + n));
    fed += n;
    return n > 0;
  };
  SpeechStream stream(model, options.recognizer);
  AsrResult r;
  r.path = path;
  out.begin(path);
  // When the audio completing each position arrived: (positions after a read, its time).
  std::deque<std::pair<int64_t, Clock::time_point>> arrivals;
  std::vector<float> chunk;
  std::vector<CtcToken> fresh;
  std::vector<RecognizedWord> fresh_words;
  auto hand_out = [&] {
    fresh.clear();
    fresh_words.clear();
    stream.take_settled(fresh, out.words() ? &fresh_words : nullptr);
    const auto now = Clock::now();
    for (const CtcToken& t : fresh) {
      // The read that completed the token's last position.
      while (arrivals.size() > 1 && arrivals.front().first <= t.end) arrivals.pop_front();
      const double latency = seconds(now - arrivals.front().second);
      r.latency_mean += latency;
      r.latency_max = std::max(r.latency_max, latency);
      ++r.latency_count;
    }
    // Reads before the best hypothesis's first unsettled position are dropped,
    // so a long silence, which settles nothing, does not grow the queue (a
    // rival that wins later may end a phone earlier: its latency then counts
    // from a later read).
    const std::vector<CtcToken> pending = stream.tentative();
    const int64_t unsettled = pending.empty() ? stream.positions() : pending.front().start;
    while (arrivals.size() > 1 && arrivals.front().first <= unsettled) arrivals.pop_front();
    if (out.keeps_phones()) r.phones.insert(r.phones.end(), fresh.begin(), fresh.end());
    r.words.insert(r.words.end(), fresh_words.begin(), fresh_words.end());
    // The line shows words with --words, else phones.
    if (out.words())
      out.update(word_strings(fresh_words), word_strings(stream.tentative_words()));
    else
      out.update(phone_strings(fresh), phone_strings(pending));
  };
  while (read(chunk)) {
    if (chunk.empty()) continue;
    const auto arrived = Clock::now();
    stream.push(chunk.data(), int64_t(chunk.size()));
    arrivals.emplace_back(stream.positions(), arrived);
    hand_out();
  }
  check(stream.samples() >= kMinSpeechSamples,
        (in ? in->name() : path) + ": shorter than one 25 ms analysis frame");
  arrivals.emplace_back(INT64_MAX, Clock::now());  // the end of the input completes the last position
  stream.finish();
  hand_out();
  if (r.latency_count > 0) r.latency_mean /= double(r.latency_count);
  r.duration = double(stream.samples()) / kSpeechSampleRate;
  r.times = stream.times();
  r.wall = seconds(Clock::now() - t0);
  return r;
}

}  // namespace lt::app
