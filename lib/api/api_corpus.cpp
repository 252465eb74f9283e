// lt.h: a speech corpus as lt-train --data and lt-asr --ref read it
// (speech/speech_corpus.h), and the edit distances a recognizer is scored
// with against it (heads/edit_distance.h): what lt-asr --ref reports.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api_internal.h"
#include "heads/edit_distance.h"
#include "speech/speech_corpus.h"

using lt::api::ArgumentError;
using lt::api::require;

struct lt_corpus {
  struct Entry {
    lt::Utterance utterance;
    std::vector<std::string> phones, words;        // the texts the pointers below point into
    std::vector<const char*> phone_texts, word_texts;
  };
  std::vector<Entry> entries;
};

lt_status lt_corpus_read(const char* path, const char* lexicon, lt_corpus** corpus) {
  if (corpus) *corpus = nullptr;
  return lt::api::guarded([&] {
    require(path, "path");
    require(corpus, "corpus");
    auto c = std::make_unique<lt_corpus>();
    for (lt::Utterance& u : lt::read_corpus(path, lexicon ? lexicon : "")) {
      lt_corpus::Entry e;
      for (int32_t id : u.phones) e.phones.push_back(lt::phone_names()[size_t(id)]);
      e.words = lt::split_words(u.words);
      e.utterance = std::move(u);
      c->entries.push_back(std::move(e));
    }
    for (lt_corpus::Entry& e : c->entries) {  // pointers once the entries stay where they are
      for (const std::string& p : e.phones) e.phone_texts.push_back(p.c_str());
      for (const std::string& w : e.words) e.word_texts.push_back(w.c_str());
    }
    *corpus = c.release();
  });
}

int64_t lt_corpus_size(const lt_corpus* corpus) { return corpus ? int64_t(corpus->entries.size()) : 0; }

lt_utterance lt_corpus_utterance(const lt_corpus* corpus, int64_t i) {
  lt_utterance out{};
  if (!corpus || i < 0 || i >= int64_t(corpus->entries.size())) return out;
  const lt_corpus::Entry& e = corpus->entries[size_t(i)];
  out.audio = e.utterance.audio.c_str();
  out.duration = e.utterance.duration;
  out.speaker = e.utterance.speaker.c_str();
  out.transcript = e.utterance.words.c_str();
  out.phones = e.phone_texts.data();
  out.phone_count = int64_t(e.phone_texts.size());
  out.words = e.word_texts.data();
  out.word_count = int64_t(e.word_texts.size());
  return out;
}

void lt_corpus_free(lt_corpus* corpus) { delete corpus; }

lt_status lt_score_tokens(const char* const* reference, int64_t n, const char* const* hypothesis, int64_t m,
                          lt_error_counts* counts) {
  return lt::api::guarded([&] {
    require(counts, "counts");
    if (n < 0 || m < 0)
      throw ArgumentError("lt_score_tokens: token counts must be >= 0, got " + std::to_string(n) + " and " +
                          std::to_string(m));
    if (n > 0) require(reference, "reference");
    if (m > 0) require(hypothesis, "hypothesis");
    // Each distinct text a symbol, so the distance compares texts.
    std::map<std::string, int32_t> symbols;
    auto symbols_of = [&](const char* const* tokens, int64_t count, const char* what) {
      std::vector<int32_t> out;
      for (int64_t i = 0; i < count; ++i) {
        if (tokens[i] == nullptr) throw ArgumentError(std::string(what) + "[" + std::to_string(i) + "] is NULL");
        out.push_back(symbols.try_emplace(tokens[i], int32_t(symbols.size())).first->second);
      }
      return out;
    };
    const std::vector<int32_t> ref = symbols_of(reference, n, "reference"), hyp = symbols_of(hypothesis, m, "hypothesis");
    lt::ErrorCounts added;
    added.add(ref, hyp);
    counts->errors += added.errors;
    counts->reference += added.reference;
    counts->substitutions += added.substitutions;
    counts->deletions += added.deletions;
    counts->insertions += added.insertions;
  });
}

double lt_error_rate(const lt_error_counts* counts) {
  if (!counts) return 0;
  lt::ErrorCounts c;
  c.errors = counts->errors;
  c.reference = counts->reference;
  return c.rate();
}
