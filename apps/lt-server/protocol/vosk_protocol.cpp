// Vosk's protocol as pure functions (vosk_protocol.h).
#include "vosk_protocol.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "http_error.h"

namespace lt::server {

namespace {

using ordered_json = nlohmann::ordered_json;

// Full scale is +-1; float samples up to this are clipped to it (lt's
// readers' rule, lt::kMaxSampleMagnitude), beyond it they are refused.
constexpr float kMaxSampleMagnitude = 2.f;

// A JSON number or boolean as a flag ("words": true, or Vosk's 1).
bool flag(const nlohmann::json& v, const char* what) {
  if (v.is_boolean()) return v.get<bool>();
  require(v.is_number(), std::string(what) + " must be true, false or a number");
  return v.get<double>() != 0;
}

// Text that is not UTF-8 becomes U+FFFD rather than an exception.
std::string dump(const ordered_json& j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

ordered_json tokens_json(const std::vector<Token>& tokens, const char* key) {
  ordered_json a = ordered_json::array();
  for (const Token& t : tokens) a.push_back({{key, t.text}, {"start", t.start}, {"end", t.end}});
  return a;
}

}  // namespace

std::string joined_text(const std::vector<Token>& tokens) {
  std::string s;
  for (const Token& t : tokens) s += (s.empty() ? "" : " ") + t.text;
  return s;
}

VoskInput::VoskInput(std::vector<std::string> model_names, double max_seconds)
    : model_names_(std::move(model_names)), max_seconds_(max_seconds) {}

VoskEvent VoskInput::text(std::string_view message) {
  require(!ended_, "a frame after eof");
  const nlohmann::json j = nlohmann::json::parse(message.begin(), message.end(), nullptr, false);
  require(!j.is_discarded(), "a text frame that is not JSON: '" + shown_text(message) + "'");
  require(j.is_object() && j.size() == 1 && (j.contains("config") || j.contains("eof") || j.contains("reset")),
          "expected {\"config\": {...}}, {\"eof\": 1} or {\"reset\": 1}, got '" + shown_text(message) + "'");
  VoskEvent e;
  if (j.contains("eof")) {
    require(flag(j["eof"], "eof"), "{\"eof\": 0} does not end a stream: send {\"eof\": 1}");
    ended_ = true;
    e.kind = VoskEvent::eof;
    return e;
  }
  if (j.contains("reset")) {
    require(flag(j["reset"], "reset"), "{\"reset\": 0} resets nothing: send {\"reset\": 1}");
    started_ = true;
    e.kind = VoskEvent::reset;
    return e;
  }
  const nlohmann::json& c = j["config"];
  require(c.is_object(), "\"config\" must be an object");
  require(!started_, "a config after audio or a reset: send it first");
  VoskConfig next = config_;
  for (const auto& [key, value] : c.items()) {
    if (key == "sample_rate") {
      require(value.is_number(), "config sample_rate must be a number");
      const double rate = value.get<double>();
      require(rate >= kMinSampleRate && rate <= kMaxSampleRate,
              "config sample_rate " + value.dump() + " is outside 1000 .. 384000 Hz");
      next.sample_rate = rate;
    } else if (key == "words") {
      next.words = flag(value, "config words");
    } else if (key == "format") {
      require(value.is_string(), "config format must be \"s16le\" or \"f32le\"");
      const std::string f = value.get<std::string>();
      require(f == "s16le" || f == "f32le", "config format '" + shown_text(f) + "' is not s16le or f32le");
      next.format = f == "s16le" ? SampleFormat::s16le : SampleFormat::f32le;
    } else if (key == "model") {
      require(value.is_string(), "config model must be a model's name");
      const std::string name = value.get<std::string>();
      std::string known;
      for (const std::string& m : model_names_) known += (known.empty() ? "" : ", ") + m;
      require(std::find(model_names_.begin(), model_names_.end(), name) != model_names_.end(),
              "unknown model '" + shown_text(name) + "' (this server streams with: " + known + ")");
    }
    // Vosk's other keys (phrase_list, max_alternatives, ...) are accepted and not used.
  }
  config_ = next;
  e.kind = VoskEvent::config;
  return e;
}

VoskEvent VoskInput::binary(std::string_view bytes) {
  require(!ended_, "audio after eof");
  const size_t width = config_.format == SampleFormat::s16le ? 2 : 4;
  require(bytes.size() % width == 0, "an audio frame of " + std::to_string(bytes.size()) + " bytes does not hold whole " +
                                         (width == 2 ? "16-bit samples" : "32-bit float samples"));
  const size_t n = bytes.size() / width;
  if (max_seconds_ > 0 && double(samples_ + int64_t(n)) > max_seconds_ * config_.sample_rate)
    throw HttpError(413, "the stream is longer than the server's limit of " + std::to_string(int64_t(max_seconds_)) +
                             " s of audio", kClosePolicy);
  VoskEvent e;
  e.kind = VoskEvent::audio;
  e.samples.resize(n);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < n; ++i, p += width) {
    if (width == 2) {
      e.samples[i] = float(int16_t(uint16_t(p[0] | p[1] << 8))) / 32768.f;
      continue;
    }
    const uint32_t bits = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    float v;
    std::memcpy(&v, &bits, 4);
    require(std::isfinite(v) && std::fabs(v) <= kMaxSampleMagnitude,
            "sample " + std::to_string(samples_ + int64_t(i)) + " is " +
                (std::isnan(v) ? std::string("NaN") : std::isinf(v) ? std::string("infinite")
                                                                     : "beyond +-2 (full scale is +-1)"));
    e.samples[i] = std::clamp(v, -1.f, 1.f);
  }
  samples_ += int64_t(n);
  started_ = true;
  return e;
}

VoskReplies::VoskReplies(bool words, double endpoint_seconds) : words_(words), endpoint_seconds_(endpoint_seconds) {}

std::string VoskReplies::result_message() {
  ordered_json j;
  if (words_ && !utterance_.empty()) {
    ordered_json a = ordered_json::array();
    for (const Token& t : utterance_) a.push_back({{"conf", 1.0}, {"end", t.end}, {"start", t.start}, {"word", t.text}});
    j["result"] = a;
  }
  j["text"] = joined_text(utterance_);
  j["phones"] = tokens_json(phones_pending_, "phone");
  utterance_.clear();
  phones_pending_.clear();
  return dump(j);
}

std::string VoskReplies::partial_message() {
  std::vector<Token> all = utterance_;
  all.insert(all.end(), tentative_words_.begin(), tentative_words_.end());
  ordered_json j;
  j["partial"] = joined_text(all);
  j["settled"] = joined_text(utterance_);
  j["tentative"] = joined_text(tentative_words_);
  j["phones"] = tokens_json(phones_pending_, "phone");
  j["tentative_phones"] = tokens_json(tentative_phones_, "phone");
  phones_pending_.clear();
  return dump(j);
}

std::vector<std::string> VoskReplies::replies(const StreamResults& r, const std::vector<Answer>& answers, bool final) {
  utterance_.insert(utterance_.end(), r.settled_words.begin(), r.settled_words.end());
  phones_pending_.insert(phones_pending_.end(), r.settled_phones.begin(), r.settled_phones.end());
  tentative_words_ = r.tentative_words;
  tentative_phones_ = r.tentative_phones;
  // An utterance ends where nothing is pending and the audio has gone on
  // past its last word for the pause (what Vosk's endpointing calls silence).
  bool ended = !utterance_.empty() && tentative_words_.empty() && tentative_phones_.empty() &&
               r.decoded_seconds - utterance_.back().end >= endpoint_seconds_;
  std::vector<std::string> out;
  for (Answer a : answers) {
    if (a == Answer::reset || ended) {
      out.push_back(result_message());
      ended = false;
    } else {
      out.push_back(partial_message());
    }
  }
  if (final) out.push_back(result_message());
  return out;
}

}  // namespace lt::server
