// lt-asr's results on stdout, the --ref scores on stderr (or in the JSON).
#include "asr_output.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "lt.hpp"

namespace lt::app {

namespace {
std::string canonical(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}
std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

int terminal_width() {
  winsize w{};
  return ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 10 ? w.ws_col : 80;
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : " ") + i;
  return s;
}
nlohmann::json counts_json(const lt_error_counts& c, const char* rate, const char* reference) {
  return {{rate, lt_error_rate(&c)}, {"errors", c.errors}, {reference, c.reference},
          {"substitutions", c.substitutions}, {"deletions", c.deletions}, {"insertions", c.insertions}};
}
}  // namespace

std::vector<Token> tokens_of(const lt_transcript* t, bool words) {
  std::vector<Token> out;
  const int64_t n = words ? lt_transcript_words(t) : lt_transcript_phones(t);
  for (int64_t i = 0; i < n; ++i) {
    const lt_token k = words ? lt_transcript_word(t, i) : lt_transcript_phone(t, i);
    out.push_back({k.text, k.start, k.end});
  }
  return out;
}

std::vector<std::string> texts(const std::vector<Token>& tokens) {
  std::vector<std::string> out;
  for (const Token& t : tokens) out.push_back(t.text);
  return out;
}

References::References(const std::string& path, const std::string& lexicon) {
  const api::Corpus corpus = api::read_corpus(path, lexicon);
  for (int64_t i = 0; i < lt_corpus_size(corpus.get()); ++i) {
    const lt_utterance u = lt_corpus_utterance(corpus.get(), i);
    const Reference r{{u.phones, u.phones + u.phone_count}, {u.words, u.words + u.word_count}};
    by_path_[canonical(u.audio)] = r;
    by_stem_[stem(u.audio)] = r;
  }
}

const Reference* References::find(const std::string& input) const {
  auto it = by_path_.find(canonical(input));
  if (it != by_path_.end()) return &it->second;
  it = by_stem_.find(stem(input));
  return it != by_stem_.end() ? &it->second : nullptr;
}

AsrOutput::AsrOutput(bool json, bool words, const std::string& model, const References& refs)
    : json_(json), words_(words), terminal_(!json && isatty(STDOUT_FILENO)), model_(model), refs_(refs) {}

void AsrOutput::begin(const std::string& path) {
  if (json_) return;
  line_open_ = true;
  started_ = printed_any_ = false;
  path_ = path;
  shown_.clear();
}

// A pipe gets the line's "path TAB" with its first phone, so an input that
// fails before any (no WAV header, too short) leaves nothing on stdout.
void AsrOutput::start_line() {
  if (!terminal_ && !started_) std::cout << path_ << "\t";
  started_ = true;
}

void AsrOutput::update(const std::vector<std::string>& fresh, const std::vector<std::string>& tentative) {
  if (json_ || !line_open_) return;
  if (!terminal_) {  // a pipe gets final items only, appended
    if (!fresh.empty()) start_line();
    for (const std::string& item : fresh) {
      std::cout << (printed_any_ ? " " : "") << item;
      printed_any_ = true;
    }
    std::cout << std::flush;
    return;
  }
  // A terminal: the tail of the line that fits, tentative items dimmed.
  const size_t room = size_t(terminal_width() - 2);
  const std::string added = joined(fresh);
  if (!added.empty()) shown_ += (shown_.empty() ? "" : " ") + added;
  if (shown_.size() > 4 * room) shown_.erase(0, shown_.size() - 2 * room);
  const std::string maybe = joined(tentative);
  std::string line = path_ + "\t" + shown_ + (maybe.empty() ? "" : " ") + maybe;
  const size_t settled_end = path_.size() + 1 + shown_.size();
  const size_t cut = line.size() > room ? line.size() - room : 0;
  const size_t split = settled_end > cut ? settled_end - cut : 0;
  line.erase(0, cut);
  started_ = true;
  std::cout << "\r\x1b[K" << line.substr(0, split) << "\x1b[2m" << line.substr(split) << "\x1b[0m" << std::flush;
}

void AsrOutput::end_line() {
  if (line_open_ && started_) std::cout << "\n" << std::flush;
  line_open_ = false;
}

// --ref: the input's PER (and WER) into j, or on stderr without JSON.
void AsrOutput::score(const AsrResult& r, nlohmann::json* j) {
  if (refs_.empty()) return;
  const Reference* ref = refs_.find(r.path);
  if (!ref) {
    ++unscored_;
    std::cerr << "lt-asr: " << r.path << ": no reference in --ref\n";
    return;
  }
  ++scored_;
  // Each pair scored once, then added to the totals.
  auto score_texts = [](const std::vector<std::string>& want, const std::vector<Token>& got, lt_error_counts& total) {
    std::vector<const char*> w, g;
    for (const std::string& t : want) w.push_back(t.c_str());
    for (const Token& t : got) g.push_back(t.text.c_str());
    lt_error_counts one{};
    api::ok(lt_score_tokens(w.data(), int64_t(w.size()), g.data(), int64_t(g.size()), &one));
    total.errors += one.errors, total.reference += one.reference;
    total.substitutions += one.substitutions, total.deletions += one.deletions, total.insertions += one.insertions;
    return one;
  };
  const lt_error_counts phones = score_texts(ref->phones, r.phones, total_);
  const lt_error_counts words = words_ ? score_texts(ref->words, r.words, total_words_) : lt_error_counts{};
  if (j) {
    j->update(counts_json(phones, "per", "reference_phones"));
    if (words_) (*j)["wer"] = counts_json(words, "wer", "reference_words");
    return;
  }
  std::fprintf(stderr, "lt-asr: %s: PER %.2f%% (%lld errors over %lld phones)", r.path.c_str(), 100 * lt_error_rate(&phones),
               (long long)phones.errors, (long long)phones.reference);
  if (words_)
    std::fprintf(stderr, ", WER %.2f%% (%lld errors over %lld words)", 100 * lt_error_rate(&words), (long long)words.errors,
                 (long long)words.reference);
  std::fprintf(stderr, "\n");
}

void AsrOutput::write(const AsrResult& r) {
  if (!json_) {
    const std::string phones = joined(texts(r.phones)), words = joined(texts(r.words));
    if (!line_open_) {
      std::cout << r.path << "\t" << (words_ ? words + "\t" : "") << phones << "\n" << std::flush;
    } else {
      if (terminal_) update({}, {});  // the line without its dimmed tail
      start_line();
      std::cout << (words_ ? "\t" + phones : "") << "\n" << std::flush;
    }
    line_open_ = false;
    score(r, nullptr);
    return;
  }
  nlohmann::json phones = nlohmann::json::array();
  for (const Token& t : r.phones) phones.push_back({{"phone", t.text}, {"start", t.start}, {"end", t.end}});
  nlohmann::json j = {{"path", r.path},
                      {"phones", phones},
                      {"duration", r.duration},
                      {"seconds", r.wall},
                      {"rtf", r.duration > 0 ? r.wall / r.duration : 0},
                      {"frontend_seconds", r.times.frontend},
                      {"encoder_seconds", r.times.encoder},
                      {"decoder_seconds", r.times.decoder},
                      {"model", model_}};
  if (words_) {
    nlohmann::json words = nlohmann::json::array();
    for (const Token& w : r.words) words.push_back({{"word", w.text}, {"start", w.start}, {"end", w.end}});
    j["words"] = words;
    j["text"] = joined(texts(r.words));
  }
  if (r.latency_count > 0) j.update({{"latency_mean_ms", 1e3 * r.latency_mean}, {"latency_max_ms", 1e3 * r.latency_max}});
  score(r, &j);
  std::cout << j.dump() << "\n" << std::flush;
}

void AsrOutput::finish() {
  if (refs_.empty()) return;
  if (json_) {
    nlohmann::json j = counts_json(total_, "per", "reference_phones");
    if (words_) j["wer"] = counts_json(total_words_, "wer", "reference_words");
    j.update({{"summary", true}, {"scored", scored_}, {"unscored", unscored_}});
    std::cout << j.dump() << "\n" << std::flush;
    return;
  }
  std::fprintf(stderr, "lt-asr: PER %.2f%% (%lld errors: %lld sub, %lld del, %lld ins, over %lld phones)",
               100 * lt_error_rate(&total_), (long long)total_.errors, (long long)total_.substitutions,
               (long long)total_.deletions, (long long)total_.insertions, (long long)total_.reference);
  if (words_)
    std::fprintf(stderr, ", WER %.2f%% (%lld errors over %lld words)", 100 * lt_error_rate(&total_words_),
                 (long long)total_words_.errors, (long long)total_words_.reference);
  std::fprintf(stderr, " on %lld inputs", (long long)scored_);
  if (unscored_ > 0) std::fprintf(stderr, " (%lld without a reference)", (long long)unscored_);
  std::fprintf(stderr, "\n");
}

}  // namespace lt::app
