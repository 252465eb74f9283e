// Audio as it arrives on a file descriptor: the WAV header is walked as the
// bytes come (audio/wav_header.h), whole sample frames are decoded and
// resampled at once, and a partial frame waits for the next read.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "audio/audio_stream.h"
#include "audio/pcm.h"
#include "audio/resampler.h"
#include "audio/wav_header.h"
#include "common/error.h"

namespace lt {

namespace {
constexpr size_t kReadBytes = 16384;
}  // namespace

struct AudioStream::Impl {
  int fd;
  bool raw;
  double follow = 0;  // seconds without growth before the end of a file counts
  std::chrono::steady_clock::time_point last_data = std::chrono::steady_clock::now();
  bool header_done = false, eof = false, finished = false;
  int channels = 1, rate = 0;
  PcmFormat format = PcmFormat::s16le;
  int64_t data_left = -1;  // bytes of the data chunk still to come; -1: to the end
  int64_t frames_in = 0;   // input frames decoded so far
  std::vector<uint8_t> pending;
  std::vector<float> mono;
  std::unique_ptr<audio::Resampler> resampler;
  std::unique_ptr<audio::WavHeader> header;  // until its data chunk starts

};

AudioStream::AudioStream(int fd, std::string name, const RawAudio& raw, double follow_seconds)
    : impl_(std::make_unique<Impl>()), name_(name == "-" ? "stdin" : std::move(name)) {
  impl_->fd = fd;
  impl_->follow = follow_seconds;
  impl_->raw = raw.sample_rate > 0;
  if (impl_->raw) {
    check(raw.channels >= 1 && raw.channels <= 64,
          name_ + ": raw audio needs 1 to 64 channels, not " + std::to_string(raw.channels));
    impl_->channels = raw.channels;
    impl_->rate = raw.sample_rate;
    impl_->format = raw.format;
    impl_->header_done = true;
    impl_->resampler = std::make_unique<audio::Resampler>(raw.sample_rate, name_);
  } else {
    impl_->header = std::make_unique<audio::WavHeader>(name_);
  }
}

AudioStream::~AudioStream() = default;

bool AudioStream::read(std::vector<float>& out) {
  Impl& s = *impl_;
  out.clear();
  if (s.finished) return false;
  if (!s.eof) {
    const size_t at = s.pending.size();
    s.pending.resize(at + kReadBytes);
    ssize_t n;
    do n = ::read(s.fd, s.pending.data() + at, kReadBytes);
    while (n < 0 && errno == EINTR);
    check(n >= 0, name_ + ": read failed: " + std::strerror(errno));
    s.pending.resize(at + size_t(n));
    const auto now = std::chrono::steady_clock::now();
    if (n > 0) s.last_data = now;
    s.eof = n == 0 && std::chrono::duration<double>(now - s.last_data).count() >= s.follow;
    if (n == 0 && !s.eof) {  // a growing file: look again shortly
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return true;
    }
  }
  if (!s.header_done) {
    const size_t used = s.header->feed(s.pending.data(), s.pending.size());
    s.pending.erase(s.pending.begin(), s.pending.begin() + long(used));
    if (!s.header->done()) {
      check(!s.eof, name_ + (s.header->bytes() == 0 ? ": no audio (empty input)" : ": ends inside its WAV header"));
      return true;
    }
    const RawAudio f = s.header->pcm_format();
    s.channels = f.channels;
    s.rate = f.sample_rate;
    s.format = f.format;
    s.data_left = s.header->data_bytes();
    s.header.reset();
    s.header_done = true;
    s.resampler = std::make_unique<audio::Resampler>(s.rate, name_);
  }
  const int64_t frame = int64_t(s.channels) * pcm_bytes(s.format);
  int64_t usable = int64_t(s.pending.size());
  if (s.data_left >= 0) usable = std::min(usable, s.data_left);
  const int64_t frames = usable / frame;
  s.mono.clear();
  audio::append_mono(s.pending.data(), frames, s.channels, s.format, name_, s.frames_in, s.mono);
  s.frames_in += frames;
  s.pending.erase(s.pending.begin(), s.pending.begin() + long(frames * frame));
  if (s.data_left >= 0) {
    s.data_left -= frames * frame;
    if (s.data_left < frame) s.eof = true;  // the data chunk is complete; whatever follows is not audio
  }
  s.resampler->process(s.mono.data(), s.mono.size(), out);
  if (s.eof) {
    check(!s.raw || s.pending.empty(), name_ + ": raw input ends with " + std::to_string(s.pending.size()) +
                                           " bytes, not a whole frame of " + std::to_string(frame) +
                                           " bytes: wrong raw flags?");
    check(s.frames_in > 0, name_ + ": no audio samples");
    s.resampler->flush(out);
    s.finished = true;
  }
  samples_ += int64_t(out.size());
  return true;
}

}  // namespace lt
