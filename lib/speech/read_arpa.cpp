// The ARPA reader (speech/language_model.h). Lines are streamed through zlib
// (gzread passes a file without gzip's magic bytes through unchanged), so a
// large model is never held as text, and each n-gram goes straight into the
// model's contexts and arcs. The header's counts are only checked against
// the sections, and bound what is reserved: a hostile header cannot make the
// reader allocate more than the file's own entries need.
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

#include "common/error.h"
#include "speech/language_model.h"

namespace lt {
namespace {

constexpr int kMaxOrder = 32;  // a phrase grammar is as long as its longest phrase
constexpr size_t kMaxLine = 1 << 20;

// Lines of a plain or gzip file, or of text in memory, without their '\n'
// (and '\r').
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")), buffer_(1 << 16) {
    if (!f_) throw Error(path + ": cannot open: " + std::strerror(errno));
  }
  LineReader(const std::string& name, const std::string& text)
      : path_(name), f_(nullptr), buffer_(text.begin(), text.end()), size_(buffer_.size()), done_(true) {}
  ~LineReader() {
    if (f_) gzclose(f_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool next(std::string& line) {
    line.clear();
    bool ended = false;  // by a '\n', not by the end of the file
    while (!ended) {
      if (pos_ == size_ && !refill()) break;
      const char* start = buffer_.data() + pos_;
      const char* newline = static_cast<const char*>(std::memchr(start, '\n', size_ - pos_));
      const size_t take = newline ? size_t(newline - start) : size_ - pos_;
      line.append(start, take);
      pos_ += take + (newline ? 1 : 0);
      check(line.size() <= kMaxLine, path_ + ":" + std::to_string(number_ + 1) + ": a line longer than 1 MiB");
      ended = newline != nullptr;
    }
    if (!ended && line.empty()) return false;
    ++number_;
    check(line.find('\0') == std::string::npos, path_ + ":" + std::to_string(number_) + ": a NUL byte: not text");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  }
  int64_t number() const { return number_; }

 private:
  bool refill() {
    if (done_) return false;
    const int got = gzread(f_, buffer_.data(), unsigned(buffer_.size()));
    int code = Z_OK;
    const char* message = gzerror(f_, &code);
    if (code == Z_ERRNO) throw Error(path_ + ": read error: " + std::strerror(errno));
    if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) throw Error(path_ + ": corrupt gzip data: " + message);
    pos_ = 0;
    size_ = size_t(got);
    done_ = got == 0;
    return got > 0;
  }

  std::string path_;
  gzFile f_;
  std::vector<char> buffer_;
  size_t pos_ = 0, size_ = 0;
  bool done_ = false;
  int64_t number_ = 0;
};

void split_fields(const std::string& line, std::vector<std::string>& fields) {
  fields.clear();
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
}

bool blank(const std::string& line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

std::string trimmed(const std::string& line) {
  std::vector<std::string> f;
  split_fields(line, f);
  return f.size() == 1 ? f[0] : line;
}

}  // namespace

// Per-line checks throw with `if`: check()'s message would be built for
// every line of a model with millions.
class ArpaReader {
  using Context = LanguageModel::Context;
  using Arc = LanguageModel::Arc;

 public:
  explicit ArpaReader(const std::string& path) : path_(path), lines_(path) {}
  ArpaReader(const std::string& name, const std::string& text) : path_(name), lines_(name, text) {}

  LanguageModel read() {
    lm_.name_ = path_;
    read_header();
    contexts_.push_back({-1, -1, 0, 0, 0.0});
    for (int n = 1; n <= lm_.order_; ++n) read_section(n);
    check(trimmed(line_) == "\\end\\", where() + ": expected \\end\\ after the " + std::to_string(lm_.order_) +
                                           "-grams, found '" + line_.substr(0, 80) + "'");
    check(lm_.bos_ >= 0 && lm_.eos_ >= 0, path_ + ": the 1-grams lack " + std::string(lm_.bos_ < 0 ? "<s>" : "</s>") +
                                              ", which every sentence's score needs");
    link_suffixes();
    auto tables = std::make_shared<std::pair<std::vector<Context>, std::vector<Arc>>>(std::move(contexts_),
                                                                                      std::move(arcs_));
    lm_.contexts_ = tables->first.data();
    lm_.context_count_ = tables->first.size();
    lm_.arcs_ = tables->second.data();
    lm_.arc_slots_ = tables->second.size();
    lm_.storage_ = std::move(tables);
    lm_.begin_ = lm_.next_state(0, lm_.bos_);
    return std::move(lm_);
  }

 private:
  std::string where() const { return path_ + ":" + std::to_string(lines_.number()); }

  // The next line that is not blank; false at the end of the file.
  bool next_content() {
    while (lines_.next(line_))
      if (!blank(line_)) return true;
    return false;
  }

  void read_header() {
    for (;;) {  // text before \data\ (a tool's notes) is skipped
      check(next_content(), path_ + ": no \\data\\ line: not an ARPA file");
      if (trimmed(line_) == "\\data\\") break;
    }
    for (;;) {
      check(next_content(), where() + ": the file ends inside the \\data\\ header");
      if (trimmed(line_) == "\\1-grams:") break;
      const int n = int(declared_.size()) + 1;
      const std::string want = "'ngram " + std::to_string(n) + "=COUNT'";
      split_fields(line_, fields_);
      std::string spec;  // "N=COUNT", tolerating spaces around '='
      for (size_t i = 1; i < fields_.size(); ++i) spec += fields_[i];
      const size_t eq = spec.find('=');
      check(!fields_.empty() && fields_[0] == "ngram" && eq != std::string::npos,
            where() + ": expected " + want + " or \\1-grams:, found '" + line_.substr(0, 80) + "'");
      check(spec.substr(0, eq) == std::to_string(n),
            where() + ": expected " + want + " (orders count up from 1), found '" + line_.substr(0, 80) + "'");
      check(n <= kMaxOrder, where() + ": order " + std::to_string(n) + " is above the " + std::to_string(kMaxOrder) +
                                " this reader supports");
      int64_t count = -1;
      const char* begin = spec.data() + eq + 1;
      const auto [end, ec] = std::from_chars(begin, spec.data() + spec.size(), count);
      check(ec == std::errc() && end == spec.data() + spec.size() && count >= 0,
            where() + ": the count in '" + line_.substr(0, 80) + "' is not a whole number");
      declared_.push_back(count);
    }
    check(!declared_.empty(), where() + ": \\1-grams: before any 'ngram N=COUNT' line");
    lm_.order_ = int(declared_.size());
    lm_.ngram_counts_.assign(declared_.size(), 0);
  }

  double number(const std::string& field, bool probability) {
    double v = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec != std::errc() || end != field.data() + field.size() || !std::isfinite(v))
      throw Error(where() + ": '" + field.substr(0, 40) + "' is not a finite number");
    if (probability && v > 0) throw Error(where() + ": log10 probability " + field + " is above 0");
    if (std::fabs(v) > LanguageModel::kMaxLog10)
      throw Error(where() + ": '" + field.substr(0, 40) + "' is beyond the +/-1e12 a log10 value may take");
    return v * LanguageModel::kLn10;
  }

  int32_t add_word(const std::string& raw) {
    std::string w;
    for (char c : raw) w += char(std::toupper(static_cast<unsigned char>(c)));
    int32_t* special = w == "<S>" ? &lm_.bos_ : w == "</S>" ? &lm_.eos_ : w == "<UNK>" ? &lm_.unk_ : nullptr;
    if (special) w = w == "<S>" ? "<s>" : w == "</S>" ? "</s>" : "<unk>";
    const int32_t id = int32_t(lm_.words_.size());
    check(lm_.ids_.emplace(w, id).second, where() + ": the 1-gram '" + w + "' repeats an earlier one");
    if (special) *special = id;
    lm_.words_.push_back(w);
    return id;
  }

  int32_t known_word(const std::string& raw) {
    const int32_t id = lm_.word_id(raw);
    if (id < 0) throw Error(where() + ": '" + raw.substr(0, 80) + "' is not among the 1-grams");
    return id;
  }

  // The arc (context, word), new (no probability, no context) when missing;
  // the table doubles before it is half full.
  Arc& arc_or_new(int32_t context, int32_t word) {
    if ((arc_count_ + 1) * 2 > arcs_.size()) {
      const std::vector<Arc> old = std::move(arcs_);
      arcs_.assign(std::max<size_t>(1024, old.size() * 2), Arc{LanguageModel::kNoArc, 0.0, -1, false});
      for (const Arc& a : old)
        if (a.key != LanguageModel::kNoArc) arcs_[LanguageModel::find_slot(arcs_.data(), arcs_.size(), a.key)] = a;
    }
    const uint64_t k = LanguageModel::key(context, word);
    Arc& a = arcs_[LanguageModel::find_slot(arcs_.data(), arcs_.size(), k)];
    if (a.key == LanguageModel::kNoArc) {
      a.key = k;
      ++arc_count_;
    }
    return a;
  }

  // The context "parent word", made (with back-off weight 1) when missing.
  int32_t context(int32_t parent, int32_t word) {
    Arc& a = arc_or_new(parent, word);
    if (a.next < 0) {
      a.next = int32_t(contexts_.size());
      contexts_.push_back({parent, word, 0, contexts_[size_t(parent)].length + 1, 0.0});
    }
    return a.next;
  }

  void read_section(int n) {
    const std::string header = "\\" + std::to_string(n) + "-grams:";
    if (n > 1) {
      check(!line_.empty() && trimmed(line_) == header,
            where() + ": expected " + header + ", found '" + line_.substr(0, 80) + "'");
    }
    const int64_t header_line = lines_.number();
    const bool with_backoff = n < lm_.order_;
    int64_t entries = 0;
    for (;;) {
      if (!next_content())
        throw Error(where() + ": the file ends in the " + std::to_string(n) + "-grams, without \\end\\");
      if (line_[line_.find_first_not_of(" \t")] == '\\') break;
      split_fields(line_, fields_);
      if (fields_.size() != size_t(n) + 1 && !(with_backoff && fields_.size() == size_t(n) + 2))
        throw Error(where() + ": a " + std::to_string(n) + "-gram line is a log10 probability, " + std::to_string(n) +
                    " word(s)" + (with_backoff ? " and an optional back-off weight" : "") + "; this one has " +
                    std::to_string(fields_.size()) + " fields");
      const double logp = number(fields_[0], true);
      const double backoff = fields_.size() == size_t(n) + 2 ? number(fields_[size_t(n) + 1], false) : 0.0;
      int32_t parent = 0;
      for (int i = 1; i < n; ++i) parent = context(parent, known_word(fields_[size_t(i)]));
      const int32_t word = n == 1 ? add_word(fields_[1]) : known_word(fields_[size_t(n)]);
      Arc& a = arc_or_new(parent, word);
      if (a.has_prob) throw Error(where() + ": this " + std::to_string(n) + "-gram repeats an earlier one");
      a.logp = logp;
      a.has_prob = true;
      if (with_backoff) contexts_[size_t(context(parent, word))].backoff = backoff;
      ++entries;
    }
    check(entries == declared_[size_t(n - 1)],
          path_ + ":" + std::to_string(header_line) + ": the " + std::to_string(n) + "-grams section has " +
              std::to_string(entries) + " entries, the \\data\\ header says " +
              std::to_string(declared_[size_t(n - 1)]));
    lm_.ngram_counts_[size_t(n - 1)] = entries;
  }

  // suffix("w1 .. wk") is the longest "s wk" that is a context, s on the
  // suffix chain of "w1 .. wk-1": shorter contexts first, so those links exist.
  void link_suffixes() {
    std::vector<int32_t> by_length(contexts_.size());
    for (size_t i = 0; i < by_length.size(); ++i) by_length[i] = int32_t(i);
    std::stable_sort(by_length.begin(), by_length.end(), [&](int32_t a, int32_t b) {
      return contexts_[size_t(a)].length < contexts_[size_t(b)].length;
    });
    for (int32_t id : by_length) {
      Context& c = contexts_[size_t(id)];
      if (c.length <= 1) continue;  // the empty history and single words link to the empty history
      for (int32_t s = contexts_[size_t(c.parent)].suffix;; s = contexts_[size_t(s)].suffix) {
        const Arc& a = arcs_[LanguageModel::find_slot(arcs_.data(), arcs_.size(), LanguageModel::key(s, c.word))];
        if (a.key != LanguageModel::kNoArc && a.next >= 0) {
          c.suffix = a.next;
          break;
        }
        if (s == 0) break;
      }
    }
  }

  std::string path_;
  LineReader lines_;
  std::string line_;
  std::vector<std::string> fields_;
  std::vector<int64_t> declared_;
  LanguageModel lm_;
  std::vector<Context> contexts_;
  std::vector<Arc> arcs_;
  size_t arc_count_ = 0;
};

LanguageModel read_arpa(const std::string& path) { return ArpaReader(path).read(); }
LanguageModel read_arpa_text(const std::string& name, const std::string& text) { return ArpaReader(name, text).read(); }

}  // namespace lt
