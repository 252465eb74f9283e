// Random ARPA models for the language-model and word-search tests, written
// to plain or gzip files, and their back-off probabilities computed naively
// from the format's definition over n-grams held as strings.
#pragma once
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "io/temp_dir.h"
#include "test_util.h"

namespace lt::test {

struct ArpaEntry {
  double log10_p = 0;
  bool has_backoff = false;
  double log10_backoff = 0;
};

struct ArpaModel {
  int order = 1;
  std::vector<std::string> vocabulary;  // every unigram, <s> and </s> included
  std::map<std::vector<std::string>, ArpaEntry> ngrams;
};

// A model over `words` plus <s>, </s> (and <unk>): every unigram, and for
// each higher order a few n-grams that mostly extend a lower one but some
// whose lower-order context is missing, as ARPA allows.
// Draws of 5 to 25 n-grams per order above 1, or `draws` each (repeats merge).
inline ArpaModel random_arpa(Rng& rng, int order, const std::vector<std::string>& words, bool with_unk,
                             int64_t draws = 0) {
  ArpaModel m;
  m.order = order;
  m.vocabulary = words;
  m.vocabulary.push_back("<s>");
  m.vocabulary.push_back("</s>");
  if (with_unk) m.vocabulary.push_back("<unk>");
  auto entry = [&](int n) {
    ArpaEntry e;
    e.log10_p = rng.uniform(-3, -0.05);
    e.has_backoff = n < order && rng.uniform(0, 1) < 0.8;
    if (e.has_backoff) e.log10_backoff = rng.uniform(-1.5, 0.5);
    return e;
  };
  for (const std::string& w : m.vocabulary) {
    ArpaEntry e = entry(1);
    if (w == "<s>") e.log10_p = -99;  // never predicted, as KenLM writes it
    m.ngrams[{w}] = e;
  }
  auto word_at = [&](size_t position, int n) {
    for (;;) {  // <s> only first, </s> only last
      const std::string& w = m.vocabulary[size_t(rng.integer(0, int64_t(m.vocabulary.size()) - 1))];
      if ((w == "<s>" && position > 0) || (w == "</s>" && position + 1 < size_t(n))) continue;
      return w;
    }
  };
  for (int n = 2; n <= order; ++n) {
    std::vector<std::vector<std::string>> lower;
    for (const auto& [g, e] : m.ngrams)
      if (int(g.size()) == n - 1 && g.back() != "</s>") lower.push_back(g);
    for (int64_t k = draws > 0 ? draws : rng.integer(5, 25); k > 0; --k) {
      std::vector<std::string> g;
      if (rng.uniform(0, 1) < 0.75 && !lower.empty()) {
        g = lower[size_t(rng.integer(0, int64_t(lower.size()) - 1))];
      } else {
        for (int i = 0; i + 1 < n; ++i) g.push_back(word_at(size_t(i), n));
      }
      g.push_back(word_at(size_t(n - 1), n));
      m.ngrams[g] = entry(n);
    }
  }
  return m;
}

inline std::string arpa_text(const ArpaModel& m, Rng& rng) {
  std::vector<std::vector<const std::pair<const std::vector<std::string>, ArpaEntry>*>> by_order(size_t(m.order));
  for (const auto& kv : m.ngrams) by_order[kv.first.size() - 1].push_back(&kv);
  std::string text = "written by lt's tests\n\n\\data\\\n";
  for (int n = 1; n <= m.order; ++n)
    text += "ngram " + std::to_string(n) + "=" + std::to_string(by_order[size_t(n - 1)].size()) + "\n";
  char number[64];
  for (int n = 1; n <= m.order; ++n) {
    text += "\n\\" + std::to_string(n) + "-grams:\n";
    for (const auto* kv : by_order[size_t(n - 1)]) {
      std::snprintf(number, sizeof number, "%.17g", kv->second.log10_p);
      text += number;
      for (const std::string& w : kv->first) {
        // The reader upper-cases words: write some in lower case.
        std::string written = w;
        if (rng.uniform(0, 1) < 0.3)
          for (char& c : written) c = char(std::tolower(static_cast<unsigned char>(c)));
        text += (rng.uniform(0, 1) < 0.5 ? "\t" : " ") + written;
      }
      if (kv->second.has_backoff) {
        std::snprintf(number, sizeof number, "%.17g", kv->second.log10_backoff);
        text += std::string("\t") + number;
      }
      text += "\n";
    }
  }
  return text + "\n\\end\\\n";
}

inline void write_text_file(const std::string& path, const std::string& text, bool gzip) {
  if (!gzip) {
    write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb6");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), unsigned(text.size())) == int(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// ln P(word | history) by the definition: the n-gram's probability if the
// model has it, else the history's back-off weight (1 if none) times the
// probability given the history less its first word. history holds at most
// order - 1 words.
inline double naive_log_prob(const ArpaModel& m, std::vector<std::string> history, const std::string& word) {
  const double ln10 = std::log(10.0);
  std::vector<std::string> g = history;
  g.push_back(word);
  auto it = m.ngrams.find(g);
  if (it != m.ngrams.end()) return it->second.log10_p * ln10;
  REQUIRE(!history.empty());  // every word has a unigram
  auto h = m.ngrams.find(history);
  const double backoff = h != m.ngrams.end() && h->second.has_backoff ? h->second.log10_backoff * ln10 : 0.0;
  history.erase(history.begin());
  return backoff + naive_log_prob(m, history, word);
}

// The last order - 1 words of a history.
inline std::vector<std::string> usable(const ArpaModel& m, const std::vector<std::string>& history) {
  const size_t keep = std::min(history.size(), size_t(m.order - 1));
  return std::vector<std::string>(history.end() - std::ptrdiff_t(keep), history.end());
}

}  // namespace lt::test
