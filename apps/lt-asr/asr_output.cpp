// lt-asr's results on stdout, the --ref scores on stderr (or in the JSON).
#include "asr_output.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "lt/speech_corpus.h"

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

nlohmann::json counts_json(const ErrorCounts& c) {
  return {{"per", c.rate()}, {"errors", c.errors}, {"reference_phones", c.reference},
          {"substitutions", c.substitutions}, {"deletions", c.deletions}, {"insertions", c.insertions}};
}
}  // namespace

References::References(const std::string& path, const std::string& lexicon) {
  for (const Utterance& u : read_corpus(path, lexicon)) {
    by_path_[canonical(u.audio)] = u.phones;
    by_stem_[stem(u.audio)] = u.phones;
  }
}

const std::vector<int32_t>* References::find(const std::string& input) const {
  auto it = by_path_.find(canonical(input));
  if (it != by_path_.end()) return &it->second;
  it = by_stem_.find(stem(input));
  return it != by_stem_.end() ? &it->second : nullptr;
}

AsrOutput::AsrOutput(bool json, const std::string& model, const SpeechFrontEnd& frontend, const References& refs)
    : json_(json), terminal_(!json && isatty(STDOUT_FILENO)), model_(model), frontend_(frontend), refs_(refs) {}

std::string AsrOutput::phone_text(const std::vector<CtcToken>& tokens) const {
  std::string s;
  for (const CtcToken& t : tokens) s += (s.empty() ? "" : " ") + phone_names()[size_t(t.label)];
  return s;
}

void AsrOutput::begin(const std::string& path) {
  if (json_) return;
  if (!terminal_) std::cout << path << "\t" << std::flush;
  line_open_ = true;
  printed_any_ = false;
  path_ = path;
  shown_.clear();
}

void AsrOutput::update(const std::vector<CtcToken>& fresh, const std::vector<CtcToken>& tentative) {
  if (json_ || !line_open_) return;
  if (!terminal_) {  // a pipe gets final phones only, appended
    for (const CtcToken& t : fresh) {
      std::cout << (printed_any_ ? " " : "") << phone_names()[size_t(t.label)];
      printed_any_ = true;
    }
    std::cout << std::flush;
    return;
  }
  // A terminal: the tail of the line that fits, tentative phones dimmed.
  const size_t room = size_t(terminal_width() - 2);
  const std::string added = phone_text(fresh);
  if (!added.empty()) shown_ += (shown_.empty() ? "" : " ") + added;
  if (shown_.size() > 4 * room) shown_.erase(0, shown_.size() - 2 * room);
  const std::string maybe = phone_text(tentative);
  std::string line = path_ + "\t" + shown_ + (maybe.empty() ? "" : " ") + maybe;
  const size_t settled_end = path_.size() + 1 + shown_.size();
  const size_t cut = line.size() > room ? line.size() - room : 0;
  const size_t split = settled_end > cut ? settled_end - cut : 0;
  line.erase(0, cut);
  std::cout << "\r\x1b[K" << line.substr(0, split) << "\x1b[2m" << line.substr(split) << "\x1b[0m" << std::flush;
}

void AsrOutput::end_line() {
  if (line_open_) std::cout << "\n" << std::flush;
  line_open_ = false;
}

void AsrOutput::write(const AsrResult& r) {
  const std::vector<int32_t>* ref = refs_.empty() ? nullptr : refs_.find(r.path);
  ErrorCounts score;
  if (ref) {
    score.add(*ref, labels_of(r.phones));
    total_.add(*ref, labels_of(r.phones));
    ++scored_;
  } else if (!refs_.empty()) {
    ++unscored_;
    std::cerr << "lt-asr: " << r.path << ": no reference in --ref\n";
  }
  if (!json_) {
    if (!line_open_) {
      std::cout << r.path << "\t" << phone_text(r.phones) << "\n" << std::flush;
    } else {
      if (terminal_) update({}, {});  // the line without its dimmed tail
      std::cout << "\n" << std::flush;
    }
    line_open_ = false;
    if (ref)
      std::fprintf(stderr, "lt-asr: %s: PER %.2f%% (%lld errors over %lld phones)\n", r.path.c_str(),
                   100 * score.rate(), (long long)score.errors, (long long)score.reference);
    return;
  }
  nlohmann::json phones = nlohmann::json::array();
  for (const CtcToken& t : r.phones)
    phones.push_back({{"phone", phone_names()[size_t(t.label)]},
                      {"start", position_start_seconds(frontend_, t.start)},
                      {"end", std::min(r.duration, position_start_seconds(frontend_, t.end + 1))}});
  nlohmann::json j = {{"path", r.path},
                      {"phones", phones},
                      {"duration", r.duration},
                      {"seconds", r.wall},
                      {"rtf", r.duration > 0 ? r.wall / r.duration : 0},
                      {"frontend_seconds", r.times.frontend},
                      {"encoder_seconds", r.times.encoder},
                      {"decoder_seconds", r.times.decoder},
                      {"model", model_}};
  if (r.latency_count > 0) j.update({{"latency_mean_ms", 1e3 * r.latency_mean}, {"latency_max_ms", 1e3 * r.latency_max}});
  if (ref) j.update(counts_json(score));
  std::cout << j.dump() << "\n" << std::flush;
}

void AsrOutput::finish() {
  if (refs_.empty()) return;
  if (json_) {
    nlohmann::json j = counts_json(total_);
    j.update({{"summary", true}, {"scored", scored_}, {"unscored", unscored_}});
    std::cout << j.dump() << "\n" << std::flush;
    return;
  }
  std::fprintf(stderr, "lt-asr: PER %.2f%% (%lld errors: %lld sub, %lld del, %lld ins, over %lld phones) on %lld inputs",
               100 * total_.rate(), (long long)total_.errors, (long long)total_.substitutions,
               (long long)total_.deletions, (long long)total_.insertions, (long long)total_.reference,
               (long long)scored_);
  if (unscored_ > 0) std::fprintf(stderr, " (%lld without a reference)", (long long)unscored_);
  std::fprintf(stderr, "\n");
}

}  // namespace lt::app
