// Transcriptions as whisper.cpp's and OpenAI's response formats
// (transcript_formats.h).
#include "transcript_formats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "http_error.h"

namespace lt::server {

namespace {
using ordered_json = nlohmann::ordered_json;

ordered_json tokens(const std::vector<Token>& list, const char* key) {
  ordered_json a = ordered_json::array();
  for (const Token& t : list) a.push_back({{key, t.text}, {"start", t.start}, {"end", t.end}});
  return a;
}
// Text that is not UTF-8 becomes U+FFFD rather than an exception.
std::string dump(const ordered_json& j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }
}  // namespace

std::vector<Segment> segments_of(const std::vector<Token>& words) {
  std::vector<Segment> out;
  for (const Token& w : words) {
    if (out.empty() || w.start - out.back().end >= kSegmentPauseSeconds || out.back().words.size() >= kSegmentMaxWords) {
      out.push_back({w.start, w.end, "", {}});
    }
    Segment& s = out.back();
    s.end = w.end;
    s.text += (s.text.empty() ? "" : " ") + w.text;
    s.words.push_back(w);
  }
  return out;
}

bool is_transcription_format(std::string_view f) {
  return f == "json" || f == "text" || f == "verbose_json" || f == "srt" || f == "vtt";
}

std::string subtitle_time(double seconds, char decimal) {
  const long long ms = std::llround(std::max(0.0, seconds) * 1000);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, decimal,
                ms % 1000);
  return buf;
}

FormattedBody format_transcription(const Transcription& t, std::string_view format) {
  require(is_transcription_format(format),
          "response_format '" + shown_text(format, 40) + "' is not one of json, text, verbose_json, srt, vtt");
  const std::string text = joined_text(t.words);
  if (format == "text") return {text + "\n", "text/plain; charset=utf-8"};
  if (format == "json") {
    ordered_json j;
    j["text"] = text;
    j["words"] = tokens(t.words, "word");
    j["phones"] = tokens(t.phones, "phone");
    return {dump(j), "application/json"};
  }
  const std::vector<Segment> segs = segments_of(t.words);
  if (format == "verbose_json") {
    ordered_json s = ordered_json::array();
    for (size_t i = 0; i < segs.size(); ++i)
      s.push_back({{"id", i}, {"seek", 0}, {"start", segs[i].start}, {"end", segs[i].end}, {"text", segs[i].text},
                   {"words", tokens(segs[i].words, "word")}});
    ordered_json j;
    j["task"] = "transcribe";
    j["language"] = "english";
    j["duration"] = t.duration;
    j["text"] = text;
    j["segments"] = s;
    j["words"] = tokens(t.words, "word");
    j["phones"] = tokens(t.phones, "phone");
    return {dump(j), "application/json"};
  }
  std::string out = format == "vtt" ? "WEBVTT\n\n" : "";
  const char decimal = format == "vtt" ? '.' : ',';
  for (size_t i = 0; i < segs.size(); ++i) {
    if (format == "srt") out += std::to_string(i + 1) + "\n";
    out += subtitle_time(segs[i].start, decimal) + " --> " + subtitle_time(segs[i].end, decimal) + "\n" + segs[i].text +
           "\n\n";
  }
  return {out, format == "vtt" ? "text/vtt; charset=utf-8" : "application/x-subrip; charset=utf-8"};
}

}  // namespace lt::server
