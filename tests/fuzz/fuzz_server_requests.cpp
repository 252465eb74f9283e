// lt-server's handling of client bytes, as pure functions (the protocol
// layer, apps/lt-server/protocol): byte 0 picks what the rest is.
//   0: a multipart/form-data request: its Content-Type up to the first '\n',
//      then its body (parse_multipart, then the transcription form's fields)
//   1: a WebSocket session on /asr: frames cut at -LT-NEXT-FILE-, each
//      frame's first byte odd for text, even for binary (VoskInput), each
//      accepted audio frame's decoding answered through VoskReplies
//   2: a request target and a JSON image request (parse_target,
//      parse_image_request, parse_whole_number, parse_seed)
//   3: tokens made of the bytes through every transcription response format
// The one correct rejection is an HttpError whose message is one line
// without control bytes, with a status of 400 to 599 (the session answers
// it); anything else (a crash, a sanitizer report, another exception, a
// reply that is not JSON, audio outside [-1, 1]) is a finding.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http_error.h"
#include "multipart.h"
#include "request_fields.h"
#include "transcript_formats.h"
#include "vosk_protocol.h"

namespace {

using lt::server::HttpError;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "harness: %s\n", what.c_str());
  std::abort();
}

bool control_free(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

// Runs f; an HttpError is accepted when its message keeps the contract.
template <class F>
bool refused_or_done(F&& f) {
  try {
    f();
    return false;
  } catch (const HttpError& e) {
    const std::string msg = e.what();
    if (msg.empty() || !control_free(msg) || e.status() < 400 || e.status() > 599)
      finding("an error breaks the contract (one line, a 4xx/5xx status): " + std::to_string(e.status()) + " " + msg);
    const nlohmann::json j = nlohmann::json::parse(lt::server::error_json(msg), nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.size() != 1 || !j.contains("error")) finding("error_json is not {\"error\"}");
    return true;
  }
}

void must_be_json(const std::string& text) {
  if (nlohmann::json::parse(text, nullptr, false).is_discarded()) finding("a reply that is not JSON: " + text);
}

std::vector<std::string_view> frames(std::string_view data) {
  static const std::string_view cut = "-LT-NEXT-FILE-";
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = data.find(cut);
    out.push_back(data.substr(0, at));
    if (at == std::string_view::npos || out.size() >= 64) return out;
    data.remove_prefix(at + cut.size());
  }
}

void multipart(std::string_view data) {
  const size_t nl = data.find('\n');
  const std::string_view type = data.substr(0, nl), body = nl == std::string_view::npos ? "" : data.substr(nl + 1);
  refused_or_done([&] {
    const auto parts = lt::server::parse_multipart(type, body);
    if (parts.size() > lt::server::kMaxFormParts) finding("more parts than the limit");
    for (const auto& p : parts) {
      if (p.name.empty()) finding("a part without a name");
      if (p.body.data() < body.data() || p.body.data() + p.body.size() > body.data() + body.size())
        finding("a part's body outside the request body");
    }
    // The transcription form's checks on what was parsed.
    if (const auto* f = lt::server::find_part(parts, "response_format")) {
      lt::server::Transcription t;
      lt::server::format_transcription(t, f->body);
    }
    if (const auto* c = lt::server::find_part(parts, "count")) lt::server::parse_whole_number(c->body, "count", 1, 16);
    if (const auto* s = lt::server::find_part(parts, "seed")) lt::server::parse_seed(s->body);
  });
}

void vosk(std::string_view data) {
  lt::server::VoskInput input({"asr-stream"}, 30);
  double decoded = 0;
  std::optional<lt::server::VoskReplies> replies;
  for (std::string_view frame : frames(data)) {
    if (frame.empty()) continue;
    const bool text = (static_cast<unsigned char>(frame[0]) & 1) != 0;
    frame.remove_prefix(1);
    lt::server::VoskEvent e;
    if (refused_or_done([&] { e = text ? input.text(frame) : input.binary(frame); })) return;  // the session closes
    if (!replies) replies.emplace(input.config().words, 0.4);
    for (float v : e.samples)
      if (!(v >= -1.f && v <= 1.f)) finding("an audio sample outside [-1, 1]");
    // Answer as the compute loop would, with a token per frame.
    lt::server::StreamResults r;
    decoded += double(e.samples.size()) / input.config().sample_rate;
    const std::string word(frame.substr(0, 12));
    if (e.kind == lt::server::VoskEvent::audio) {
      r.settled_words.push_back({word, decoded, decoded});
      r.settled_phones.push_back({word, decoded, decoded});
      r.tentative_words.push_back({word, decoded, decoded});
    }
    r.decoded_seconds = decoded + 1;
    std::vector<lt::server::Answer> owed;
    if (e.kind == lt::server::VoskEvent::audio) owed.push_back(lt::server::Answer::audio);
    if (e.kind == lt::server::VoskEvent::reset) owed.push_back(lt::server::Answer::reset);
    const bool final = e.kind == lt::server::VoskEvent::eof;
    const auto out = replies->replies(r, owed, final);
    if (out.size() != owed.size() + (final ? 1 : 0)) finding("not one reply per frame");
    for (const std::string& m : out) must_be_json(m);
  }
}

void fields(std::string_view data) {
  refused_or_done([&] {
    const lt::server::Target t = lt::server::parse_target(data);
    if (t.path.size() > data.size()) finding("a path longer than its target");
  });
  refused_or_done([&] { lt::server::parse_image_request(data, 16, {"mnist"}); });
  refused_or_done([&] { lt::server::parse_whole_number(data, "count", 0, 1000); });
  refused_or_done([&] { lt::server::parse_seed(data); });
}

void formats(std::string_view data) {
  lt::server::Transcription t;
  double at = 0;
  for (std::string_view w : frames(data)) {
    const double length = w.empty() ? 0.5 : (static_cast<unsigned char>(w[0]) % 64) / 32.0;
    t.words.push_back({std::string(w), at, at + length});
    t.phones.push_back({std::string(w.substr(0, 2)), at, at + length / 2});
    at += length;
  }
  t.duration = at;
  for (const char* f : {"json", "text", "verbose_json", "srt", "vtt"}) {
    const lt::server::FormattedBody b = lt::server::format_transcription(t, f);
    if (std::string_view(f).find("json") != std::string_view::npos) must_be_json(b.body);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      multipart(rest);
      break;
    case 1:
      vosk(rest);
      break;
    case 2:
      fields(rest);
      break;
    default:
      formats(rest);
      break;
  }
  return 0;
}
