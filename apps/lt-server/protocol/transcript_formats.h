// A file's transcription in the response formats of whisper.cpp's
// /inference and OpenAI's /v1/audio/transcriptions: json ({"text"}, with
// lt's "words" and "phones" beside it), text, verbose_json (OpenAI's task,
// language, duration, text, segments and words, plus "phones"), srt and vtt
// (one cue per segment). Segments are runs of words cut at pauses, and at
// kSegmentMaxWords words so that a subtitle fits the screen.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "vosk_protocol.h"

namespace lt::server {

struct Transcription {
  std::vector<Token> words, phones;
  double duration = 0;  // seconds of audio
};

struct Segment {
  double start = 0, end = 0;
  std::string text;
  std::vector<Token> words;
};

// A pause of this many seconds between two words starts a new segment (the
// recognizer's own pause, lt_recognizer_options.pause_seconds).
constexpr double kSegmentPauseSeconds = 0.4;
constexpr size_t kSegmentMaxWords = 16;

std::vector<Segment> segments_of(const std::vector<Token>& words);

// "json", "text", "verbose_json", "srt", "vtt": true for these.
bool is_transcription_format(std::string_view format);

struct FormattedBody {
  std::string body;
  std::string content_type;
};
// The body for format (is_transcription_format's), HttpError(400) for another.
FormattedBody format_transcription(const Transcription& t, std::string_view format);

// 00:01:02,345 (srt: ',') or 00:01:02.345 (vtt: '.').
std::string subtitle_time(double seconds, char decimal);

}  // namespace lt::server
