// The C API's speech recognition (lt.h) against lt-asr on the same
// utterances: the same phones and words with the same times, a stream's
// phones equal to the whole recording's, and one-line failures.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "audio/audio_file.h"
#include "lt.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

const std::string kOffline = std::string(LT_WEIGHTS_DIR) + "/asr.safetensors";
const std::string kStreaming = std::string(LT_WEIGHTS_DIR) + "/asr-stream.safetensors";
const std::string kWords = std::string(LT_WEIGHTS_DIR) + "/speech-words.arpa.gz";

std::string espeak(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string wav = dir.file(name);
  REQUIRE(std::system(("espeak-ng -v en-us -w '" + wav + "' '" + text + "' 2>/dev/null").c_str()) == 0);
  return wav;
}

struct Recognizer {
  lt_recognizer* r = nullptr;
  Recognizer(const std::string& model, const lt_recognizer_options& o) {
    REQUIRE_MESSAGE(lt_recognizer_new(model.c_str(), &o, &r) == LT_OK, std::string(lt_last_error()));
  }
  ~Recognizer() { lt_recognizer_free(r); }
};

struct Transcript {
  lt_transcript* t = nullptr;
  ~Transcript() { lt_transcript_free(t); }
};

// (text, start, end) of every phone or word.
using Tokens = std::vector<std::tuple<std::string, double, double>>;
Tokens tokens(const lt_transcript* t, int64_t (*count)(const lt_transcript*),
              lt_token (*token)(const lt_transcript*, int64_t)) {
  Tokens out;
  for (int64_t i = 0; i < count(t); ++i) {
    const lt_token k = token(t, i);
    out.emplace_back(k.text, k.start, k.end);
  }
  return out;
}
Tokens phones(const lt_transcript* t) { return tokens(t, lt_transcript_phones, lt_transcript_phone); }
Tokens words(const lt_transcript* t) { return tokens(t, lt_transcript_words, lt_transcript_word); }
Tokens from_json(const nlohmann::json& a, const char* key) {
  Tokens out;
  for (const auto& k : a) out.emplace_back(k[key].get<std::string>(), k["start"].get<double>(), k["end"].get<double>());
  return out;
}
void check_same(const Tokens& got, const Tokens& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(std::get<0>(got[i]) == std::get<0>(want[i]));
    CHECK(std::fabs(std::get<1>(got[i]) - std::get<1>(want[i])) < 1e-9);
    CHECK(std::fabs(std::get<2>(got[i]) - std::get<2>(want[i])) < 1e-9);
  }
}

}  // namespace

TEST_CASE("lt.h speech: a file transcribed through the API has lt-asr's phones and words with their times") {
  TempDir dir;
  const std::string wav = espeak(dir, "a.wav", "seven days without rain");
  lt_recognizer_options o = lt_recognizer_default_options();
  const std::string lexicon = dir.file("words.dict");
  write_text(lexicon, "SEVEN S EH V AH N\nDAYS D EY Z\nWITHOUT W IH TH AW T\nRAIN R EY N\nRAY R EY\nDAY D EY\nA AH\n");
  o.lexicon = lexicon.c_str();
  Recognizer r(kOffline, o);
  Transcript t;
  REQUIRE_MESSAGE(lt_transcribe_file(r.r, wav.c_str(), &t.t) == LT_OK, std::string(lt_last_error()));
  CHECK(lt_transcript_phones(t.t) > 5);
  CHECK(lt_transcript_words(t.t) >= 1);

  const CommandResult c = run_tool(dir, "lt-asr", "-m '" + kOffline + "' --beam 1 --words --lm none --lexicon '" +
                                                      lexicon + "' -f json -q '" + wav + "'");
  INFO("stderr: " << c.err);
  REQUIRE(c.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(c.out);
  check_same(phones(t.t), from_json(j["phones"], "phone"));
  check_same(words(t.t), from_json(j["words"], "word"));
  CHECK(std::fabs(lt_transcript_seconds(t.t) - j["duration"].get<double>()) < 1e-9);

  // The samples themselves give the same transcript; lt_audio_read reads them as read_audio does.
  const std::vector<float> samples = read_audio(wav);
  float* read = nullptr;
  int64_t count = 0;
  REQUIRE(lt_audio_read(wav.c_str(), &read, &count) == LT_OK);
  CHECK(std::vector<float>(read, read + count) == samples);
  lt_audio_free(read);
  CHECK(lt_audio_read(dir.file("none.wav").c_str(), &read, &count) == LT_ERROR);
  CHECK(read == nullptr);
  CHECK(std::string(lt_last_error()).find("none.wav") != std::string::npos);
  Transcript again;
  REQUIRE(lt_transcribe(r.r, samples.data(), int64_t(samples.size()), &again.t) == LT_OK);
  check_same(phones(again.t), phones(t.t));
  CHECK(lt_transcript_phone(t.t, lt_transcript_phones(t.t)).text == nullptr);

  // A word list and a grammar: lt-asr --vocabulary's and --grammar's words and times.
  auto as_lt_asr = [&](const std::string& flag) {
    Recognizer r2(kOffline, o);
    Transcript t2;
    REQUIRE_MESSAGE(lt_transcribe_file(r2.r, wav.c_str(), &t2.t) == LT_OK, std::string(lt_last_error()));
    const CommandResult v = run_tool(dir, "lt-asr", "-m '" + kOffline + "' --beam 1 --words --lexicon '" + lexicon +
                                                        "' " + flag + " -f json -q '" + wav + "'");
    REQUIRE(v.exit_code == 0);
    check_same(words(t2.t), from_json(nlohmann::json::parse(v.out)["words"], "word"));
    std::string heard;
    for (const auto& [word, start, end] : words(t2.t)) heard += (heard.empty() ? "" : " ") + word;
    return heard;
  };
  const std::string list = dir.file("list.txt");
  write_text(list, "seven days # a comment\nwithout rain\n");
  o.word_list = list.c_str();
  std::istringstream listed(as_lt_asr("--vocabulary '" + list + "'"));
  for (std::string word; listed >> word;) CHECK((word == "SEVEN" || word == "DAYS" || word == "WITHOUT" || word == "RAIN"));
  const std::string grammar = dir.file("grammar.txt");
  write_text(grammar, "seven days without rain\nseven days\nrain without a day\n");
  o.word_list = nullptr;
  o.grammar = grammar.c_str();
  CHECK(as_lt_asr("--grammar '" + grammar + "'") == "SEVEN DAYS WITHOUT RAIN");
  o.word_list = list.c_str();
  lt_recognizer* both = nullptr;
  CHECK(lt_recognizer_new(kOffline.c_str(), &o, &both) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("a grammar takes the place of a word list") != std::string::npos);
  o.grammar = nullptr;
  // Without a lexicon to pronounce it: one line.
  o.lexicon = nullptr;
  lt_recognizer* none = nullptr;
  CHECK(lt_recognizer_new(kOffline.c_str(), &o, &none) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("a word list needs a lexicon") != std::string::npos);
}

TEST_CASE("lt.h speech: a stream pushed in random pieces settles the whole recording's phones") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::vector<float> samples = read_audio(espeak(dir, "b.wav", "the quick brown fox jumps over the lazy dog"));
  Recognizer r(kStreaming, lt_recognizer_default_options());
  Transcript whole;
  REQUIRE(lt_transcribe(r.r, samples.data(), int64_t(samples.size()), &whole.t) == LT_OK);

  lt_stream* s = nullptr;
  REQUIRE_MESSAGE(lt_stream_new(r.r, &s) == LT_OK, std::string(lt_last_error()));
  Tokens settled;
  for (int64_t at = 0; at < int64_t(samples.size());) {
    const int64_t n = std::min<int64_t>(rng.integer(1, 4000), int64_t(samples.size()) - at);
    REQUIRE(lt_stream_push(s, samples.data() + at, n) == LT_OK);
    at += n;
    Transcript part, tail;
    REQUIRE(lt_stream_take_settled(s, &part.t) == LT_OK);
    REQUIRE(lt_stream_tentative(s, &tail.t) == LT_OK);
    for (const auto& p : phones(part.t)) settled.push_back(p);
  }
  REQUIRE(lt_stream_finish(s) == LT_OK);
  Transcript last;
  REQUIRE(lt_stream_take_settled(s, &last.t) == LT_OK);
  for (const auto& p : phones(last.t)) settled.push_back(p);
  lt_stream_free(s);
  REQUIRE(settled.size() == phones(whole.t).size());
  for (size_t i = 0; i < settled.size(); ++i) CHECK(std::get<0>(settled[i]) == std::get<0>(phones(whole.t)[i]));
}

TEST_CASE("lt.h speech: a stream hands out every phone at most max_delay after its audio ends") {
  TempDir dir;
  const std::vector<float> samples =
      read_audio(espeak(dir, "d.wav", "she sells sea shells by the sea shore, and the shells she sells are sea shells"));
  lt_recognizer_options o{};
  REQUIRE(lt_recognizer_tool_options(0, &o) == LT_OK);  // lt-asr's: the beam search with the phone model
  for (double delay : {0.1, 0.2, 0.5, 0.77}) {
    o.max_delay = delay;
    INFO("max_delay " << delay);
    Recognizer r(kStreaming, o);
    lt_stream* s = nullptr;
    REQUIRE_MESSAGE(lt_stream_new(r.r, &s) == LT_OK, std::string(lt_last_error()));
    // 10 ms a push: a phone is out by the push after its delay, when the
    // position that settles it (and the 15 ms its last frame reaches past
    // it) is there.
    double longest = 0;
    int64_t out = 0;
    for (int64_t at = 0; at < int64_t(samples.size());) {
      const int64_t n = std::min<int64_t>(160, int64_t(samples.size()) - at);
      REQUIRE(lt_stream_push(s, samples.data() + at, n) == LT_OK);
      at += n;
      Transcript part;
      REQUIRE(lt_stream_take_settled(s, &part.t) == LT_OK);
      for (const auto& p : phones(part.t)) {
        const double waited = double(at) / 16000 - std::get<2>(p);
        CHECK(waited <= delay + 1e-9);
        longest = std::max(longest, waited);
        ++out;
      }
    }
    lt_stream_free(s);
    CHECK(out > 20);
    CHECK(longest > delay - 0.03 - 0.015 - 0.01);  // the delay binds: a phone waited within a position and a push of it
  }
}

TEST_CASE("lt.h speech: failures are a status and one line") {
  TempDir dir;
  lt_recognizer* r = nullptr;
  const std::string image = tiny_image_checkpoint(dir, "image.safetensors");
  CHECK(lt_recognizer_new(image.c_str(), nullptr, &r) == LT_ERROR);
  CHECK(r == nullptr);
  CHECK(std::string(lt_last_error()).find("image.safetensors") != std::string::npos);
  lt_recognizer_options o = lt_recognizer_default_options();
  o.phone_lm = kWords.c_str();
  CHECK(lt_recognizer_new(kOffline.c_str(), &o, &r) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("beam") != std::string::npos);
  // A model that sees both sides cannot stream.
  Recognizer offline(kOffline, lt_recognizer_default_options());
  lt_stream* s = nullptr;
  CHECK(lt_stream_new(offline.r, &s) == LT_ERROR);
  CHECK(s == nullptr);
  CHECK(!std::string(lt_last_error()).empty());
  lt_transcript* t = nullptr;
  CHECK(lt_transcribe_file(offline.r, dir.file("missing.wav").c_str(), &t) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("missing.wav") != std::string::npos);
}

namespace {
// A sentence of random words the CMU dictionary has, different at every run.
std::string random_sentence(uint64_t seed) {
  static const char* const kWordsSaid[] = {"seven", "days",  "without", "rain",  "the",   "quick", "brown",
                                           "fox",   "jumps", "over",    "lazy",  "dog",   "open",  "window",
                                           "green", "light", "turn",    "left",  "right", "stop",  "morning"};
  const size_t n = sizeof kWordsSaid / sizeof kWordsSaid[0];
  std::string text;
  for (int i = 0; i < 4 + int(seed % 3); ++i)
    text += (text.empty() ? "" : " ") + std::string(kWordsSaid[(seed >> (5 * i)) % n]);
  return text;
}

std::string shipped(const char* name) {
  char* path = nullptr;
  REQUIRE_MESSAGE(lt_find_shipped(name, &path) == LT_OK, std::string(lt_last_error()));
  const std::string out = path;
  lt_string_free(path);
  return out;
}
}  // namespace

TEST_CASE("lt.h speech: lt_find_shipped and lt_recognizer_tool_options give lt-asr's phones and words with no options") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  const std::string text = random_sentence(seed);
  INFO("seed " << seed << ": " << text);
  const std::string wav = espeak(dir, "a.wav", text);

  // The shipped files the tools read, found from the library as the tools find them.
  const std::string model = shipped("asr.safetensors");
  CHECK(model == std::filesystem::weakly_canonical(kOffline).string());
  CHECK(shipped("asr-stream.safetensors") == std::filesystem::weakly_canonical(kStreaming).string());
  CHECK(shipped("lexicon") == lt_default_lexicon());

  for (const bool with_words : {false, true}) {
    CAPTURE(with_words);
    lt_recognizer_options o;
    REQUIRE_MESSAGE(lt_recognizer_tool_options(with_words, &o) == LT_OK, std::string(lt_last_error()));
    CHECK(o.beam == LT_ASR_BEAM);
    CHECK(std::string(o.phone_lm) == std::filesystem::weakly_canonical(std::string(LT_WEIGHTS_DIR) + "/speech-phones.arpa.gz").string());
    CHECK((o.word_lm != nullptr) == with_words);
    Recognizer r(model, o);
    Transcript t;
    REQUIRE_MESSAGE(lt_transcribe_file(r.r, wav.c_str(), &t.t) == LT_OK, std::string(lt_last_error()));
    CHECK(lt_transcript_phones(t.t) > 5);
    // lt-asr with nothing but the file (and --words).
    const CommandResult c = run_tool(dir, "lt-asr", std::string(with_words ? "--words " : "") + "-f json -q '" + wav + "'");
    INFO("stderr: " << c.err);
    REQUIRE(c.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(c.out);
    check_same(phones(t.t), from_json(j["phones"], "phone"));
    if (with_words) {
      CHECK(lt_transcript_words(t.t) >= 1);
      check_same(words(t.t), from_json(j["words"], "word"));
    }
  }

  // LT_WEIGHTS is the only place looked when set: a folder without the file is one line naming it.
  const std::string empty = std::filesystem::path(dir.file("empty/.keep")).parent_path().string();
  std::filesystem::create_directories(empty);
  const char* before = std::getenv("LT_WEIGHTS");
  const std::string kept = before ? before : "";
  setenv("LT_WEIGHTS", empty.c_str(), 1);
  char* path = nullptr;
  CHECK(lt_find_shipped("asr.safetensors", &path) == LT_ERROR);
  CHECK(path == nullptr);
  const std::string line = lt_last_error();
  CHECK(line.find("LT_WEIGHTS=" + empty) != std::string::npos);
  CHECK(line.find((std::filesystem::path(empty) / "asr.safetensors").string()) != std::string::npos);
  lt_recognizer_options o;
  CHECK(lt_recognizer_tool_options(0, &o) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("speech-phones.arpa.gz") != std::string::npos);
  if (before)
    setenv("LT_WEIGHTS", kept.c_str(), 1);
  else
    unsetenv("LT_WEIGHTS");
  CHECK(lt_find_shipped("../etc/passwd", &path) == LT_ERROR);
  CHECK(lt_find_shipped(nullptr, &path) == LT_ERROR_ARGUMENT);
}
