// lt.h: audio as a tool is handed it, raw PCM with its layout named, and
// audio that arrives in pieces on a descriptor (audio/audio_stream.h): what
// lt-asr reads its inputs with.
#include <memory>
#include <string>
#include <vector>

#include "api_internal.h"
#include "audio/audio_stream.h"

using lt::api::ArgumentError;
using lt::api::caller_copy;
using lt::api::require;

static_assert(LT_SPEECH_SAMPLE_RATE == lt::kSpeechSampleRate && LT_MIN_SPEECH_SAMPLES == lt::kMinSpeechSamples);

struct lt_audio_reader {
  std::unique_ptr<lt::AudioStream> stream;
  std::vector<float> chunk;  // the last read's samples, handed out until the next read
};

namespace {
// The layout of raw PCM, or {} (a file with a header) for NULL or rate 0.
lt::RawAudio raw_layout(const lt_audio_format* format) {
  lt::RawAudio raw;
  if (format == nullptr || format->sample_rate == 0) return raw;
  if (format->sample_rate < 0 || format->channels < 1)
    throw ArgumentError("raw audio needs a sample rate >= 1 and channels >= 1, got " +
                        std::to_string(format->sample_rate) + " Hz and " + std::to_string(format->channels) +
                        " channels");
  require(format->sample, "format->sample");
  raw.sample_rate = format->sample_rate;
  raw.channels = format->channels;
  raw.format = lt::parse_pcm_format(format->sample);
  return raw;
}
}  // namespace

lt_audio_format lt_audio_default_format(void) { return lt_audio_format{0, 1, "s16le"}; }

lt_status lt_audio_read_format(const char* path, const lt_audio_format* format, float** samples, int64_t* count) {
  if (samples) *samples = nullptr;
  if (count) *count = 0;
  return lt::api::guarded([&] {
    require(path, "path");
    require(samples, "samples");
    require(count, "count");
    const std::vector<float> audio = lt::read_audio(path, raw_layout(format));
    *samples = caller_copy(audio.data(), audio.size());
    *count = int64_t(audio.size());
  });
}

lt_status lt_audio_reader_new(int fd, const char* name, const lt_audio_format* format, double follow_seconds,
                              lt_audio_reader** reader) {
  if (reader) *reader = nullptr;
  return lt::api::guarded([&] {
    require(name, "name");
    require(reader, "reader");
    if (fd < 0) throw ArgumentError(std::string(name) + ": not an open descriptor (" + std::to_string(fd) + ")");
    if (!(follow_seconds >= 0)) throw ArgumentError("follow_seconds must be >= 0");
    auto r = std::make_unique<lt_audio_reader>();
    r->stream = std::make_unique<lt::AudioStream>(fd, name, raw_layout(format), follow_seconds);
    *reader = r.release();
  });
}

lt_status lt_audio_reader_read(lt_audio_reader* reader, const float** samples, int64_t* count, int* more) {
  if (samples) *samples = nullptr;
  if (count) *count = 0;
  if (more) *more = 0;
  return lt::api::guarded([&] {
    require(reader, "reader");
    require(samples, "samples");
    require(count, "count");
    require(more, "more");
    *more = reader->stream->read(reader->chunk) ? 1 : 0;
    if (*more == 0) reader->chunk.clear();
    *samples = reader->chunk.data();
    *count = int64_t(reader->chunk.size());
  });
}

void lt_audio_reader_free(lt_audio_reader* reader) { delete reader; }
