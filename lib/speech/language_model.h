// Word n-gram language models read from ARPA files (KenLM's lmplz, SRILM's
// ngram-count), scored with Katz back-off for a decoder's search.
//
//   lt::LanguageModel lm = lt::read_arpa("words.arpa.gz");
//   lt::LmState s = lm.begin(), next;                 // the history "<s>"
//   double lp = lm.score(s, lm.word_id("HELLO"), &next) // ln P(HELLO | <s>)
//             + lm.end_score(next);                      // + ln P(</s> | <s> HELLO)
//
// ARPA: "\data\", one "ngram N=COUNT" line per order 1..N, then per order a
// "\N-grams:" section of "log10(p) w1 .. wN [log10(back-off)]" lines (no
// back-off weight at the highest order), and "\end\". Plain text or gzip
// (recognised by its magic bytes). An n-gram's lower-order context may be
// missing, as the format allows; its back-off weight is then 1.
//
// P(w | h) = p(h w) when the n-gram "h w" is in the model, otherwise
// bo(h) · P(w | h without its first word), with bo(h) = 1 when "h" has no
// back-off weight; the recursion ends at the unigram p(w). Scores are
// natural logarithms.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cpu_prefetch.h"

namespace lt {

// A search's history: the longest suffix of the words so far that the model
// can use (at most order - 1 words). Equal histories compare equal, so a
// decoder can merge hypotheses whose futures the model scores alike.
struct LmState {
  int32_t context = 0;  // 0 is the empty history
  bool operator==(const LmState& o) const { return context == o.context; }
  bool operator!=(const LmState& o) const { return context != o.context; }
};

class LanguageModel {
 public:
  const std::string& name() const { return name_; }  // the file it was read from, for messages
  int order() const { return order_; }
  // Words are upper-cased when read (as the lexicon's), except <s>, </s> and
  // <unk>, which are matched in any case and named as here.
  const std::vector<std::string>& words() const { return words_; }  // index = word id
  int32_t word_id(const std::string& word) const;                    // any case; -1 if not in the vocabulary
  int32_t sentence_start() const { return bos_; }
  int32_t sentence_end() const { return eos_; }
  int32_t unknown() const { return unk_; }  // -1 when the model has no <unk>
  int64_t ngrams(int n) const { return n >= 1 && n <= order_ ? ngram_counts_[size_t(n - 1)] : 0; }

  LmState begin() const { return begin_; }  // after "<s>"
  LmState empty_history() const { return LmState{}; }
  // ln P(word | from's history); *to (if given) receives the history after it.
  double score(LmState from, int32_t word, LmState* to = nullptr) const;
  // Asks the memory system for the arcs score(from, word) may read, one per
  // context down the back-off chain, so that a caller about to score many
  // pairs overlaps their cache misses instead of taking them one by one.
  void prefetch(LmState from, int32_t word) const {
    if (arc_slots_ == 0) return;
    for (int32_t c = from.context;; c = contexts_[size_t(c)].suffix) {
      prefetch_bytes(&arcs_[first_slot(key(c, word))], sizeof(Arc));  // 24 bytes: a quarter cross a line
      if (c == 0) break;
    }
  }
  // The same for a history's context, which prefetch() reads first.
  void prefetch_context(LmState from) const { prefetch_bytes(&contexts_[size_t(from.context)], sizeof(Context)); }
  double end_score(LmState from) const { return score(from, eos_); }  // ln P(</s> | history)
  // A bound no score() exceeds: 0, plus the positive back-off weights one
  // walk down the suffix links can pass (a model may have bo(h) > 1). The
  // first call passes over every context; copies share the answer.
  double max_score() const;
  // A number no other model made in this process has (copies share it: they
  // score alike), so that a memo of scores can tell models apart even when
  // one is freed and another takes its address.
  uint64_t instance() const { return instance_; }
  // The state of a history given as word ids (oldest first), and a state's history.
  LmState state_of(const std::vector<int32_t>& history) const;
  std::vector<int32_t> history(LmState state) const;

 private:
  friend class ArpaReader;
  friend class LanguageModelFile;
  static uint64_t new_instance() {
    static std::atomic<uint64_t> next{1};
    return next++;
  }
  uint64_t instance_ = new_instance();
  std::shared_ptr<std::atomic<double>> max_score_ = std::make_shared<std::atomic<double>>(-1.0);  // -1: not yet asked
  std::string name_;
  // A history the model can use: an n-gram of order < N, or the context of a
  // longer one (closed under prefixes, so the search below finds every one).
  struct Context {
    int32_t parent;  // this history without its last word (-1 for the empty one)
    int32_t word;    // its last word
    int32_t suffix;  // the longest proper suffix that is a context
    int32_t length;
    double backoff;  // ln bo(h); 0 when the file gives none
  };
  // The n-gram "context word": its probability (when in the file) and the
  // context it forms (when one).
  struct Arc {
    uint64_t key;  // key(context, word); kNoArc in an empty slot
    double logp;
    int32_t next;  // context id of "context word", -1 if not a context
    bool has_prob;
  };
  static constexpr uint64_t kNoArc = ~0ull;  // ids stay below 2^31
  // The largest |log10| of a probability or back-off: real models stay within
  // a few hundred (-99 stands for log 0; phrase models write -1e9), and the
  // bound keeps every score, a sum of back-offs included, finite.
  static constexpr double kMaxLog10 = 1e12;
  static constexpr double kLn10 = 2.302585092994046;  // ARPA files give log10, the model keeps ln
  static constexpr double kMaxLog = kMaxLog10 * kLn10;
  static uint64_t key(int32_t context, int32_t word) { return uint64_t(uint32_t(context)) << 32 | uint32_t(word); }
  // The arcs live in one open-addressing table of a power-of-two size
  // (linear probing, at most half full): a search scores every hypothesis's
  // extensions each frame, and a lookup here touches one cache line where a
  // node-based map touches three. Where key's probing starts, and its slot
  // or the empty one where it would go.
  static size_t first_slot(uint64_t key, size_t slots);
  static size_t find_slot(const Arc* table, size_t slots, uint64_t key);
  size_t first_slot(uint64_t k) const { return first_slot(k, arc_slots_); }
  const Arc* arc(int32_t context, int32_t word) const;
  LmState next_state(int32_t context, int32_t word) const;

  int order_ = 0;
  std::vector<std::string> words_;
  std::unordered_map<std::string, int32_t> ids_;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1;
  std::vector<int64_t> ngram_counts_;
  LmState begin_;
  // The contexts and the arc table, never changed once read: vectors the
  // ARPA reader built, or a mapped binary copy (load_language_model), which
  // `storage_` owns. Copies of a model share them.
  std::shared_ptr<const void> storage_;
  std::string copy_path_;  // the mapped copy's file, for the message when one of its arcs is damaged
  const Context* contexts_ = nullptr;
  size_t context_count_ = 0;
  const Arc* arcs_ = nullptr;
  size_t arc_slots_ = 0;
};

// Reads an ARPA file. Every malformed input is one lt::Error naming
// file:line and the problem: a header count that is missing, repeated or
// disagrees with its section, a field that is not a finite number (or a
// log-probability above 0), an n-gram with the wrong number of words or a
// word not among the unigrams, a repeated n-gram, no <s> or </s>, a missing
// \end\.
LanguageModel read_arpa(const std::string& path);
// The same from ARPA text in memory; errors name `name`:line.
LanguageModel read_arpa_text(const std::string& name, const std::string& text);

// A model that accepts exactly these phrases (words, any case), each as
// likely as the next: an ARPA model over every phrase prefix after <s>, with
// P(w | <s> w1..wk) = the phrases that go on with w (or end, for </s>) over
// those that begin w1..wk, and every back-off weight 10^-1e9, so a word off
// the phrases costs 2.3e9 nats: never heard while a phrase can be, the
// arithmetic still finite. Phrases of 1 to 30 words; repeats count once.
LanguageModel phrase_model(const std::vector<std::vector<std::string>>& phrases, const std::string& name);

// read_arpa through a binary copy of the model in a cache folder
// ($LT_CACHE_DIR, else $XDG_CACHE_HOME/lt, else ~/.cache/lt), named by a hash
// of the ARPA file's bytes. The first load parses the text and writes the
// copy (atomically; a folder that cannot be written only costs the parse);
// later loads read it: the shipped 6-gram phone model in a few milliseconds
// instead of most of a second. A copy that does not check out is ignored.
LanguageModel load_language_model(const std::string& arpa_path);

}  // namespace lt
