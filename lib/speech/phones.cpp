// The phone set and lexicons.
#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "io/file_bytes.h"
#include "speech/speech_corpus.h"

namespace lt {

const std::vector<std::string>& phone_names() {
  static const std::vector<std::string> names = {
      "<blank>", "AA", "AE", "AH", "AO", "AW", "AY", "B",  "CH", "D",  "DH", "EH", "ER", "EY",
      "F",       "G",  "HH", "IH", "IY", "JH", "K",  "L",  "M",  "N",  "NG", "OW", "OY", "P",
      "R",       "S",  "SH", "T",  "TH", "UH", "UW", "V",  "W",  "Y",  "Z",  "ZH"};
  return names;
}

int32_t phone_id(const std::string& name) {
  std::string p;
  for (char c : name) p += char(std::toupper(static_cast<unsigned char>(c)));
  if (!p.empty() && p.back() >= '0' && p.back() <= '2') p.pop_back();  // stress
  static const std::unordered_map<std::string, int32_t> ids = [] {
    std::unordered_map<std::string, int32_t> m;
    for (size_t i = 1; i < phone_names().size(); ++i) m[phone_names()[i]] = int32_t(i);
    return m;
  }();
  auto it = ids.find(p);
  return it == ids.end() ? -1 : it->second;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (char c : text + " ") {
    if (c == ' ' || c == '\t' || c == '\r') {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else {
      w += char(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  return words;
}

std::vector<int32_t> Lexicon::phones_of(const std::string& word) const {
  std::string w;
  for (char c : word) w += char(std::toupper(static_cast<unsigned char>(c)));
  auto it = words.find(w);
  return it == words.end() ? std::vector<int32_t>{} : it->second;
}

namespace {
// Each line of the file at path, with its number from 1.
template <class F>
void for_each_line(const std::string& path, F&& f) {
  const std::vector<uint8_t> bytes = io::read_file_bytes(path);
  const std::string text(bytes.begin(), bytes.end());
  size_t line_no = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    f(text.substr(at, end - at), ++line_no);
    at = end + 1;
  }
}
}  // namespace

Lexicon read_lexicon(const std::string& path) {
  Lexicon lex;
  lex.name = path;
  for_each_line(path, [&](const std::string& line, size_t line_no) {
    if (line.empty() || line.rfind(";;;", 0) == 0) return;
    const std::vector<std::string> fields = split_words(line);
    if (fields.empty()) return;
    const std::string& word = fields[0];
    std::vector<int32_t> phones;
    for (size_t i = 1; i < fields.size(); ++i) {
      if (fields[i][0] == '#') break;  // a trailing comment
      const int32_t id = phone_id(fields[i]);
      check(id > 0, path + ":" + std::to_string(line_no) + ": '" + fields[i] + "' is not one of the 39 ARPAbet phones");
      phones.push_back(id);
    }
    // A bare word and one followed by a comment alike: a word needs a phone.
    check(!phones.empty(), path + ":" + std::to_string(line_no) + ": word '" + word + "' has no pronunciation");
    const size_t paren = word.find('(');
    if (paren == std::string::npos || paren == 0) {
      lex.words.emplace(word, std::move(phones));
      return;
    }
    std::vector<std::vector<int32_t>>& more = lex.alternates[word.substr(0, paren)];  // "word(2)"
    if (std::find(more.begin(), more.end(), phones) == more.end()) more.push_back(std::move(phones));
  });
  // An alternate listed before its word, or without it, stands in for it;
  // repeats of the first pronunciation go.
  for (auto it = lex.alternates.begin(); it != lex.alternates.end();) {
    std::vector<std::vector<int32_t>>& more = it->second;
    auto first = lex.words.find(it->first);
    if (first == lex.words.end()) first = lex.words.emplace(it->first, more.front()).first;
    more.erase(std::remove(more.begin(), more.end(), first->second), more.end());
    it = more.empty() ? lex.alternates.erase(it) : std::next(it);
  }
  check(!lex.words.empty(), path + ": no pronunciations (expected CMU-dictionary lines \"word PH ON ES\")");
  return lex;
}

namespace {
// Each line's words (upper-cased, "#" comments cut) with their
// pronunciations from `from` added to `into`.
template <class F>
void for_each_pronounced_line(const std::string& path, const Lexicon& from, Lexicon& into, F&& f) {
  into.name = path;
  for_each_line(path, [&](const std::string& line, size_t line_no) {
    const std::vector<std::string> words = split_words(line.substr(0, line.find('#')));
    for (const std::string& word : words) {
      std::vector<int32_t> phones = from.phones_of(word);
      check(!phones.empty(), path + ":" + std::to_string(line_no) + ": '" + word + "' has no pronunciation in " +
                                 from.name + " (add it there, or give --lexicon)");
      into.words.emplace(word, std::move(phones));
      auto more = from.alternates.find(word);
      if (more != from.alternates.end()) into.alternates.insert(*more);
    }
    f(words, line_no);
  });
}
}  // namespace

Lexicon read_vocabulary(const std::string& path, const Lexicon& from) {
  Lexicon vocabulary;
  for_each_pronounced_line(path, from, vocabulary, [](const std::vector<std::string>&, size_t) {});
  check(!vocabulary.words.empty(), path + ": no words (expected a word list, whitespace-separated)");
  return vocabulary;
}

Grammar read_grammar(const std::string& path, const Lexicon& from) {
  Grammar g;
  for_each_pronounced_line(path, from, g.lexicon, [&](const std::vector<std::string>& words, size_t line_no) {
    check(words.size() <= 30, path + ":" + std::to_string(line_no) + ": a phrase of " + std::to_string(words.size()) +
                                  " words (at most 30)");
    if (!words.empty()) g.phrases.push_back(words);
  });
  check(!g.phrases.empty(), path + ": no phrases (expected one phrase a line)");
  return g;
}

}  // namespace lt
