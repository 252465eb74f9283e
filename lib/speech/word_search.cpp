// Lexicon-constrained CTC prefix beam search (speech/word_search.h).
//
// Per frame, each hypothesis continues with a blank, repeats its last phone
// (merged into it), or emits one of its trie node's children; a child that
// ends words also makes, per word, a hypothesis back at the root with the
// word appended and scored. Contributions to the same (words, trie node)
// are summed in an open-addressing table over the candidates, which keeps
// its memory from frame to frame; the beam is the best `beam` of them.
// Words live in a shared, reference-counted tree (WordHistory); the deepest
// entry every hypothesis descends from is settled and cut from its past.
//
// Timings are not part of a hypothesis's identity: merged alignments may
// place a word differently, and the hypothesis keeps the timings of its
// strongest single contribution that frame.
#include "speech/word_search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

#include "common/error.h"
#include "heads/log_space.h"
#include "speech/pronunciation_trie.h"
#include "speech/word_history.h"

namespace lt {
namespace {

constexpr int32_t kRoot = PronunciationTrie::kRoot;

struct Hyp {
  uint64_t key;         // merge key: the hash of the words, the trie node and the last phone
  int32_t words;        // WordHistory entry of the last word (kNone before the first)
  int32_t node;         // trie node of the word being spoken; the root between words
  int32_t last_phone;   // 0 before the first phone
  LmState lm;
  double lm_score;      // lm_weight · ln P_LM + word_bonus · words, so far
  double blank, label;  // ln P of the frames so far over alignments ending in a blank / in the last phone
  double strongest;     // the largest single contribution this frame: its timings are kept
  int64_t word_start;   // frame of the first phone of the word being spoken
  double total;         // log_add(blank, label), computed once before the beam is cut
  double ranked;        // its score: total + lm_score
};

struct SearchWord {
  std::string text;
  std::vector<int32_t> phones;
  int32_t lm_id;     // -1 without a language model
  int32_t spelling;  // the index of the word's first pronunciation
};

// The lexicon's words in name order (so that results do not depend on the
// hash map's order), each pronunciation once, less the words the language
// model cannot score.
std::vector<SearchWord> searchable_words(const Lexicon& lexicon, const LanguageModel* lm) {
  const std::map<std::string, std::vector<int32_t>> sorted(lexicon.words.begin(), lexicon.words.end());
  std::vector<SearchWord> out;
  for (const auto& [text, first] : sorted) {
    if (first.empty()) continue;
    int32_t id = -1;
    if (lm) {
      id = lm->word_id(text);
      if (id < 0) id = lm->unknown();
      if (id < 0 || id == lm->sentence_start() || id == lm->sentence_end()) continue;
    }
    std::vector<std::vector<int32_t>> ways = {first};
    auto more = lexicon.alternates.find(text);
    if (more != lexicon.alternates.end())  // each once: the score beam counts on it
      for (const std::vector<int32_t>& phones : more->second)
        if (std::find(ways.begin(), ways.end(), phones) == ways.end()) ways.push_back(phones);
    const int32_t spelling = int32_t(out.size());
    for (const std::vector<int32_t>& phones : ways) {
      for (int32_t p : phones)
        check(p >= 1 && p < kPhoneClasses, "WordSearch: the lexicon's word '" + text + "' has phone id " +
                                               std::to_string(p) + ", outside 1.." + std::to_string(kPhoneClasses - 1));
      out.push_back(SearchWord{text, phones, id, spelling});
    }
  }
  if (out.empty() && lm && lm->unknown() < 0)
    throw Error(lm->name() + ": no word of the lexicon (" + lexicon.name + ") is in the language model, which has no <unk>");
  check(!out.empty(), lexicon.name + ": the lexicon has no word with a pronunciation other than <s> and </s>");
  return out;
}

std::vector<std::vector<int32_t>> pronunciations(const std::vector<SearchWord>& words) {
  std::vector<std::vector<int32_t>> out;
  out.reserve(words.size());
  for (const SearchWord& w : words) out.push_back(w.phones);
  return out;
}

// Hypotheses merge when their words, trie node and last phone agree: the
// last phone only tells apart pronunciations of a word that end
// differently, whose alignments a merge would confuse (a repeat of one is a
// new phone for the other). finish() adds those up.
uint64_t merge_key(const WordHistory& history, int32_t words, int32_t node, int32_t last_phone) {
  return mix64(history.hash(words) ^ mix64((uint64_t(uint32_t(node)) << 8 | uint32_t(last_phone)) + 0x632be59bd9b4e019ull));
}

// What a hypothesis's emissions need to reach this frame's beam (the score
// beam in WordSearch::Impl::plan_reach): a word end whose alignments score
// below `cut` is left out before its LM score is looked up, unless its
// words are those of a hypothesis in the beam, listed from `extensions`
// (FrameScratch::extension_next). `cut` is the floor less
// `head` (the hypothesis's LM score and the most a word end adds), and
// rises with the floor; -inf: nothing is left out (another hypothesis has
// the same words).
struct Reach {
  double cut, head;
  int32_t extensions;  // the first, a beam index; -1: none
};

// The beam's hypotheses with the same word hash: how many, and the first
// beam hypothesis whose words are these plus one (-1: none).
struct WordsSlot {
  uint64_t hash;
  int32_t count;  // 0: an empty slot
  int32_t extensions;
};

// What the beam is cut by, apart from the candidate (at: its index): a
// sort moves these instead of whole hypotheses.
struct Rank {
  double ranked;
  uint64_t key;
  int32_t node, at;
};

// A type rather than a function, so that the sorts inline it.
struct Better {
  bool operator()(const Rank& a, const Rank& b) const {
    if (a.ranked != b.ranked) return a.ranked > b.ranked;
    return a.key != b.key ? a.key < b.key : a.node < b.node;
  }
};

// What one frame of a search works on and forgets by the next: per thread,
// shared by every search the thread runs (a group decodes its streams one
// after another on OpenMP's threads), so it stays in the core's cache
// instead of each stream's copy being fetched cold at every frame. Only the
// beam and the word history are a search's own.
struct FrameScratch {
  std::vector<Hyp> next;             // the candidates
  std::vector<int32_t> slots;        // open addressing: index into next, or -1
  std::vector<double> logp;
  std::vector<Reach> reach;          // per beam hypothesis
  std::vector<int32_t> root_order;   // the root's children by the frame's phone scores, best first
  std::vector<double> floor;         // a min-heap: lower bounds of `beam` distinct candidates
  std::vector<WordsSlot> words;      // open addressing over the beam's word hashes
  std::vector<int32_t> extension_next;  // per beam hypothesis: the next in its list of extensions, or -1
  std::vector<std::pair<LmState, int32_t>> asks;  // the scores the frame's word ends ask for
  std::vector<Rank> ranks;                        // the candidates', best first after the cut
  std::vector<int32_t> remap;                     // WordHistory::compact's
  static FrameScratch& of_thread() {
    thread_local FrameScratch scratch;
    return scratch;
  }
};

}  // namespace

// The words a search can recognise and their pronunciation trie: built once
// from a lexicon and shared by every search over it (a stream group's
// streams), since for the CMU dictionary that takes a third of a second.
struct WordVocabulary {
  WordVocabulary(const Lexicon& lexicon, const LanguageModel* model)
      : words(searchable_words(lexicon, model)), trie(pronunciations(words)), lm(model),
        lm_max(model ? model->max_score() : 0.0) {}
  std::vector<SearchWord> words;
  PronunciationTrie trie;
  const LanguageModel* lm;  // whose word ids `words` hold
  double lm_max;            // lm->max_score(), for the score beam
};

std::shared_ptr<const WordVocabulary> WordSearch::vocabulary(const Lexicon& lexicon, const LanguageModel* lm) {
  return std::make_shared<const WordVocabulary>(lexicon, lm);
}

struct WordSearch::Impl {
  Impl(std::shared_ptr<const WordVocabulary> v, const LanguageModel* model, const WordSearchOptions& o)
      : vocab(std::move(v)), words(vocab->words), trie(vocab->trie), lm(model), options(o) {
    check(vocab->lm == model, "WordSearch: a vocabulary made for another language model");
    check(o.beam >= 1, "WordSearch: beam width must be >= 1, is " + std::to_string(o.beam));
    check(o.max_delay >= 0, "WordSearch: max_delay must be >= 0, is " + std::to_string(o.max_delay));
    check(std::isfinite(o.lm_weight) && std::isfinite(o.word_bonus), "WordSearch: lm_weight and word_bonus must be finite");
    reset();
  }

  std::shared_ptr<const WordVocabulary> vocab;
  const std::vector<SearchWord>& words;
  const PronunciationTrie& trie;
  const LanguageModel* lm;
  WordSearchOptions options;
  WordHistory history;
  std::vector<Hyp> beam;
  FrameScratch* scratch = nullptr;  // the thread's, while push() runs
  std::vector<RecognizedWord> settled;
  int32_t settled_at = WordHistory::kNone;  // the last settled word's entry
  int64_t frame = 0;

  // The language model's scores already asked for: a beam asks for the same
  // (history, word) pairs frame after frame, and so do other streams over
  // the same model, while each answer is a walk of hash probes into a table
  // of tens of MB, mostly cache misses (a third of a stream's decoding
  // without this memo). One memo per thread, shared by every search that
  // thread runs (a group decodes its streams on OpenMP's threads), direct-
  // mapped so that it never allocates after its first use. A memo of a pure
  // function changes no result.
  struct alignas(32) Memo {  // aligned: a slot within one cache line, which prefetch_scores asks for
    uint64_t model = 0;  // LanguageModel::instance(); 0: empty
    uint64_t key = 0;
    double score = 0;
    LmState next;
  };
  static constexpr size_t kMemoSlots = size_t(1) << 16;
  static std::vector<Memo>& memo() {
    thread_local std::vector<Memo> slots(kMemoSlots);
    return slots;
  }
  static uint64_t memo_key(LmState from, int32_t word) { return uint64_t(uint32_t(from.context)) << 32 | uint32_t(word); }
  Memo& memo_slot(uint64_t key) const {
    return memo()[size_t(mix64(key ^ mix64(lm->instance()))) & (kMemoSlots - 1)];
  }
  bool memoized(LmState from, int32_t word) const {
    const uint64_t k = memo_key(from, word);
    const Memo& m = memo_slot(k);
    return m.key == k && m.model == lm->instance();
  }
  double lm_score(LmState from, int32_t word, LmState* to) const {
    const uint64_t k = memo_key(from, word);
    Memo& m = memo_slot(k);
    if (m.key != k || m.model != lm->instance()) {
      m.score = lm->score(from, word, &m.next);
      m.key = k;
      m.model = lm->instance();
    }
    *to = m.next;
    return m.score;
  }

  void reset() {
    history.clear();
    settled.clear();
    settled_at = WordHistory::kNone;
    frame = 0;
    const LmState start = lm ? lm->begin() : LmState{};
    beam = {Hyp{merge_key(history, WordHistory::kNone, kRoot, 0), WordHistory::kNone, kRoot, 0, start, 0.0, 0.0, kLogZero,
                0.0, 0, 0.0, 0.0}};
  }

  RecognizedWord recognized(int32_t entry) const {
    const WordHistory::Entry& e = history[entry];
    const SearchWord& w = words[size_t(e.word)];
    return RecognizedWord{w.text, w.phones, e.first_frame, e.last_frame};
  }

  // The words of entry's chain after the settled ones, oldest first, after
  // out's (settle() appends to `settled` in place, no list of its own).
  void append_words(int32_t entry, std::vector<RecognizedWord>& out) const {
    const size_t first = out.size();
    for (; entry != settled_at; entry = history[entry].parent) out.push_back(recognized(entry));
    std::reverse(out.begin() + std::ptrdiff_t(first), out.end());
  }

  int32_t& slot_of(const Hyp& h) {
    const size_t mask = scratch->slots.size() - 1;
    for (size_t i = size_t(h.key) & mask;; i = (i + 1) & mask) {
      const int32_t at = scratch->slots[i];
      if (at < 0) return scratch->slots[i];
      const Hyp& c = scratch->next[size_t(at)];
      if (c.key == h.key && c.node == h.node && c.last_phone == h.last_phone && history.same_words(c.words, h.words))
        return scratch->slots[i];
    }
  }

  void grow_slots() {
    scratch->slots.assign(std::max<size_t>(64, scratch->slots.size() * 2), -1);
    for (size_t i = 0; i < scratch->next.size(); ++i) slot_of(scratch->next[i]) = int32_t(i);
  }

  // Adds the alignments (blank, label) of hypothesis h to the candidates;
  // whether they make a new one.
  bool contribute(const Hyp& h, double blank, double label) {
    const double part = log_add(blank, label);
    if (part == kLogZero) return false;
    if ((scratch->next.size() + 1) * 2 > scratch->slots.size()) grow_slots();
    int32_t& slot = slot_of(h);
    if (slot < 0) {
      slot = int32_t(scratch->next.size());
      scratch->next.push_back(h);
      scratch->next.back().blank = blank;
      scratch->next.back().label = label;
      scratch->next.back().strongest = part;
      return true;
    }
    Hyp& c = scratch->next[size_t(slot)];
    c.blank = log_add(c.blank, blank);
    c.label = log_add(c.label, label);
    if (part > c.strongest) {
      c.strongest = part;
      c.words = h.words;
      c.word_start = h.word_start;
    }
    return false;
  }

  // A new candidate that scores at least `score` and is none of the
  // floor's: the floor's lowest gives way to it.
  void raise_floor(double score) {
    if (scratch->floor.empty() || score <= scratch->floor.front()) return;
    std::pop_heap(scratch->floor.begin(), scratch->floor.end(), std::greater<double>());
    scratch->floor.back() = score;
    std::push_heap(scratch->floor.begin(), scratch->floor.end(), std::greater<double>());
  }
  static double margin(double t) { return 1e-9 * (1 + std::fabs(t)); }

  // h emits trie node `child`'s phone with log-probability `lp` over
  // alignments `from`, less what cannot reach the beam (plan_reach).
  void emit(const Hyp& h, const Reach& r, int32_t child, double from, double lp) {
    const PronunciationTrie::Node& n = trie.node(child);
    const int64_t start = h.node == kRoot ? frame : h.word_start;
    const double label = from + lp;
    const bool alone = r.cut != kLogZero;
    if (n.children > 0 && !(alone && label + h.lm_score < scratch->floor.front())) {  // the word goes on
      Hyp e = h;
      e.node = child;
      e.last_phone = n.phone;
      e.word_start = start;
      e.key = merge_key(history, e.words, child, e.last_phone);
      if (contribute(e, kLogZero, label) && alone) raise_floor(label + e.lm_score);
    }
    for (int32_t k = 0; k < n.words; ++k) {  // a word ends
      const int32_t w = trie.words_of(n)[k];
      const bool beam_words = extended(r, words[size_t(w)].spelling);  // perhaps a key of the beam's
      if (label < r.cut && !beam_words) continue;  // cannot reach the beam, whatever its LM score
      Hyp e = h;
      e.lm_score += options.word_bonus;
      if (lm) e.lm_score += options.lm_weight * lm_score(h.lm, words[size_t(w)].lm_id, &e.lm);
      const bool fresh = alone && !beam_words;  // a key of its own: this is all it gets
      if (fresh && label + e.lm_score < scratch->floor.front()) continue;
      e.words = history.add(h.words, w, words[size_t(w)].spelling, start, frame);
      e.node = kRoot;
      e.last_phone = n.phone;
      e.key = merge_key(history, e.words, kRoot, e.last_phone);
      if (contribute(e, kLogZero, label) && fresh) raise_floor(label + e.lm_score);
    }
  }

  // The root's children, best phone first: a hypothesis between words (every
  // one of a phone search's) then stops at its first child out of reach.
  void order_root() {
    const PronunciationTrie::Node& n = trie.node(kRoot);
    scratch->root_order.clear();
    for (int32_t child = n.first_child; child < n.first_child + n.children; ++child)
      if (scratch->logp[size_t(trie.node(child).phone)] >= options.prune) scratch->root_order.push_back(child);
    std::sort(scratch->root_order.begin(), scratch->root_order.end(), [&](int32_t a, int32_t b) {
      return scratch->logp[size_t(trie.node(a).phone)] > scratch->logp[size_t(trie.node(b).phone)];
    });
  }
  // The children a hypothesis at `node` emits to, in order: the root's as
  // root_order has them, any other node's as the trie does.
  int32_t child_count(int32_t node) const {
    return node == kRoot ? int32_t(scratch->root_order.size()) : trie.node(node).children;
  }
  int32_t child(int32_t node, int32_t i) const {
    return node == kRoot ? scratch->root_order[size_t(i)] : trie.node(node).first_child + i;
  }
  // Whether h, at the root, emits nothing more from a child scoring at most
  // `bound`: its reach r is alone with its words, no beam hypothesis extends
  // them (so none of its emissions is exempt), the bound is below the cut,
  // and every later child in root_order scores less. Elsewhere emit()'s own
  // checks leave out what is out of reach, child by child.
  static bool done_at_root(const Hyp& h, const Reach& r, double bound) {
    return h.node == kRoot && r.extensions < 0 && bound < r.cut;
  }

  bool extended(const Reach& r, int32_t spelling) const {
    for (int32_t j = r.extensions; j >= 0; j = scratch->extension_next[size_t(j)])
      if (history[beam[size_t(j)].words].spelling == spelling) return true;
    return false;
  }

  // The score beam, exact. The floor holds lower bounds of K distinct
  // candidates of this frame, so the K-th best candidate scores at least
  // its lowest, T: at first what the beam's own hypotheses get from a blank
  // or a repeat alone (their keys are candidates, and merging only adds),
  // then each new candidate that certainly is not one of those raises it.
  // An emission is left out only when its key is certainly nobody else's:
  // its hypothesis's words are the only such in the beam (or another
  // hypothesis could emit to the same key), and no beam hypothesis holds
  // those words plus the word it ends. Then its score is all its key ever
  // gets, and below T it cannot make the beam: it is never made (no
  // history entry, no table slot). A word end scores at most its
  // alignments + its hypothesis's LM score + the most a word end adds
  // (LanguageModel::max_score): below T, not even its LM score is looked
  // up. Every other key gets all of its contributions in the same order, so
  // the beam is the same bits. The beam is best first, so its best
  // hypotheses' emissions raise the floor before the others are looked at.
  void plan_reach() {
    scratch->reach.assign(beam.size(), Reach{kLogZero, 0, -1});
    scratch->floor.clear();
    if (beam.size() < size_t(options.beam) || options.lm_weight < 0) return;
    for (const Hyp& h : beam) {
      const double total = h.total;
      const double repeat = h.last_phone > 0 && scratch->logp[size_t(h.last_phone)] >= options.prune
                                ? h.label + scratch->logp[size_t(h.last_phone)] : kLogZero;
      scratch->floor.push_back(log_add(total + scratch->logp[0], repeat) + h.lm_score);
    }
    std::make_heap(scratch->floor.begin(), scratch->floor.end(), std::greater<double>());
    const double T = scratch->floor.front();
    if (!std::isfinite(T)) return scratch->floor.clear();
    const double gain = options.word_bonus + (lm ? options.lm_weight * vocab->lm_max : 0.0);
    const double lift = std::max(0.0, gain);
    // The beam's word hashes in a table of at most half load, each with
    // how many hypotheses have them and the list of those extending them.
    std::vector<WordsSlot>& table = scratch->words;
    size_t slots = 64;
    while (slots < 2 * beam.size()) slots *= 2;
    table.assign(slots, WordsSlot{0, 0, -1});
    auto slot = [&](uint64_t hash) -> WordsSlot& {
      for (size_t at = size_t(hash) & (slots - 1);; at = (at + 1) & (slots - 1))
        if (table[at].count == 0 || table[at].hash == hash) return table[at];
    };
    for (const Hyp& h : beam) {
      const uint64_t hash = history.hash(h.words);
      WordsSlot& w = slot(hash);
      w.hash = hash;
      ++w.count;
    }
    scratch->extension_next.assign(beam.size(), -1);
    for (size_t j = 0; j < beam.size(); ++j) {
      if (beam[j].words == WordHistory::kNone) continue;
      WordsSlot& w = slot(history.hash(history[beam[j].words].parent));
      if (w.count == 0) continue;  // no hypothesis has the words it extends
      scratch->extension_next[j] = w.extensions;
      w.extensions = int32_t(j);
    }
    for (size_t i = 0; i < beam.size(); ++i) {
      const WordsSlot& w = slot(history.hash(beam[i].words));
      if (w.count > 1) continue;
      const double head = lift + beam[i].lm_score;
      scratch->reach[i] = Reach{T - margin(T) - head, head, w.extensions};
    }
  }

  // What the frame walks through, asked for at once so that the misses
  // overlap (WordHistory::prefetch says why they miss).
  void prefetch_search() const {
    history.prefetch();
    prefetch_bytes(beam.data(), beam.size() * sizeof(Hyp));
  }

  // The language model's arcs this frame's word ends will read: the misses
  // overlap instead of stalling one after another. In two passes, since
  // finding out what to fetch misses too: first the memo's slots and the
  // histories' contexts, then the arcs of what the memo lacks.
  void prefetch_scores() {
    scratch->asks.clear();
    for (size_t i = 0; i < beam.size(); ++i) {
      const Hyp& h = beam[i];
      const double total = h.total;
      const size_t before = scratch->asks.size();
      for (int32_t j = 0, children = child_count(h.node); j < children; ++j) {
        const PronunciationTrie::Node& c = trie.node(child(h.node, j));
        const double lp = scratch->logp[size_t(c.phone)];
        if (lp < options.prune) continue;
        if (done_at_root(h, scratch->reach[i], total + lp)) break;
        const bool low = (c.phone == h.last_phone ? h.blank : total) + lp < scratch->reach[i].cut;
        for (int32_t k = 0; k < c.words; ++k) {
          const SearchWord& w = words[size_t(trie.words_of(c)[k])];
          if (low && !extended(scratch->reach[i], w.spelling)) continue;
          scratch->asks.emplace_back(h.lm, w.lm_id);
          __builtin_prefetch(&memo_slot(memo_key(h.lm, w.lm_id)));
        }
      }
      if (scratch->asks.size() > before) lm->prefetch_context(h.lm);
    }
    for (const auto& [state, word] : scratch->asks)
      if (!memoized(state, word)) lm->prefetch(state, word);
  }

  void push(const float* row) {
    scratch = &FrameScratch::of_thread();
    prefetch_search();
    for (int c = 0; c < kPhoneClasses; ++c)
      if (!std::isfinite(row[c]))
        throw Error("WordSearch: frame " + std::to_string(frame) + ", class " + std::to_string(c) +
                    ": the logit is not finite");
    log_softmax_row(row, kPhoneClasses, scratch->logp);
    scratch->next.clear();
    std::fill(scratch->slots.begin(), scratch->slots.end(), -1);
    order_root();
    plan_reach();
    if (lm) prefetch_scores();
    for (size_t i = 0; i < beam.size(); ++i) {
      const Hyp& h = beam[i];
      Reach& r = scratch->reach[i];
      if (r.cut != kLogZero) r.cut = scratch->floor.front() - margin(scratch->floor.front()) - r.head;
      const double total = h.total;
      contribute(h, total + scratch->logp[0], kLogZero);
      if (h.last_phone > 0 && scratch->logp[size_t(h.last_phone)] >= options.prune)
        contribute(h, kLogZero, h.label + scratch->logp[size_t(h.last_phone)]);
      for (int32_t j = 0, children = child_count(h.node); j < children; ++j) {
        const int32_t c = child(h.node, j), phone = trie.node(c).phone;
        const double lp = scratch->logp[size_t(phone)];
        if (done_at_root(h, r, total + lp)) break;
        // After the same phone, only alignments with a blank between emit it anew.
        const double from = phone == h.last_phone ? h.blank : total;
        if (lp >= options.prune && from != kLogZero) emit(h, r, c, from, lp);
      }
    }
    std::vector<Hyp>& next = scratch->next;
    std::vector<Rank>& ranks = scratch->ranks;
    const size_t keep = std::min(next.size(), size_t(options.beam));
    ranks.clear();
    for (size_t i = 0; i < next.size(); ++i) {
      Hyp& c = next[i];
      c.total = log_add(c.blank, c.label);
      c.ranked = c.total + c.lm_score;
      ranks.push_back(Rank{c.ranked, c.key, c.node, int32_t(i)});
    }
    // The best `keep`, then their order: Better orders distinct candidates
    // totally, so this is the beam a full sort would give.
    const auto cut = ranks.begin() + std::ptrdiff_t(keep);
    if (keep < ranks.size()) std::nth_element(ranks.begin(), cut, ranks.end(), Better());
    std::sort(ranks.begin(), cut, Better());
    for (size_t k = 0; k < keep; ++k) history.acquire(next[size_t(ranks[k].at)].words);
    for (const Hyp& h : beam) history.release(h.words);
    beam.clear();
    for (size_t k = 0; k < keep; ++k) beam.push_back(next[size_t(ranks[k].at)]);
    history.sweep();
    ++frame;
    settle();
    if (history.sparse()) compact_history();
  }

  // The entries in use moved to the front, so that the next frames'
  // prefetch asks for them and not for the free ones between them. Entry
  // numbers are no part of a result: the same words hash and compare alike.
  void compact_history() {
    history.compact(scratch->remap);
    for (Hyp& h : beam) h.words = WordHistory::renumbered(scratch->remap, h.words);
    settled_at = WordHistory::renumbered(scratch->remap, settled_at);
  }

  // Moves the words every hypothesis shares into `settled`, first dropping
  // the hypotheses that disagree with the best one about a word it finished
  // more than max_delay frames ago.
  void settle() {
    const int32_t settled_depth = history.depth(settled_at);
    int32_t forced = beam[0].words;
    while (history.depth(forced) > settled_depth && history[forced].last_frame > frame - 1 - options.max_delay)
      forced = history[forced].parent;
    if (history.depth(forced) > settled_depth) {
      const int32_t depth = history.depth(forced);
      size_t kept = 0;
      for (const Hyp& h : beam) {
        if (history.at_depth(h.words, depth) == forced)
          beam[kept++] = h;
        else
          history.release(h.words);
      }
      beam.resize(kept);
    }
    int32_t deepest = 0;
    for (const Hyp& h : beam) deepest = std::max(deepest, history.depth(h.words));
    int32_t depth = deepest;
    for (const Hyp& h : beam) depth = std::min(depth, history.depth(h.words));
    if (depth <= settled_depth) return;  // a hypothesis has no word after the settled ones
    int32_t common = history.at_depth(beam[0].words, depth);
    for (const Hyp& h : beam) {
      int32_t other = history.at_depth(h.words, history.depth(common));
      while (common != other) common = history[common].parent, other = history[other].parent;
    }
    if (common == settled_at) return;
    append_words(common, settled);
    history.acquire(common);
    history.detach(common);
    history.release(settled_at);
    settled_at = common;
  }

  WordSearchResult finish() {
    // Between words, the hypotheses with the same words (pronounced
    // differently) add up; the strongest of them gives the timings.
    const Hyp* best = nullptr;
    double best_score = kLogZero;
    for (size_t i = 0; i < beam.size(); ++i) {
      const Hyp& h = beam[i];
      if (h.node != kRoot) continue;  // inside a word
      double total = h.ranked;
      bool first = true;
      for (size_t j = 0; j < beam.size() && first; ++j) {
        const Hyp& o = beam[j];
        if (j == i || o.node != kRoot || !history.same_words(o.words, h.words)) continue;
        if (j < i) first = false;  // counted with the earlier one
        total = log_add(total, o.ranked);
      }
      if (!first) continue;
      const double s = total + (lm ? options.lm_weight * lm->end_score(h.lm) : 0.0);
      if (!best || s > best_score) best = &h, best_score = s;
    }
    if (!best) best = &beam[0];  // the beam is sorted: its best, less the word it is inside
    WordSearchResult result{std::move(settled), best_score};
    append_words(best->words, result.words);
    reset();
    return result;
  }
};

WordSearch::WordSearch(const Lexicon& lexicon, const LanguageModel* lm, const WordSearchOptions& options)
    : impl_(std::make_unique<Impl>(vocabulary(lexicon, lm), lm, options)) {}

WordSearch::WordSearch(std::shared_ptr<const WordVocabulary> vocabulary, const LanguageModel* lm,
                       const WordSearchOptions& options)
    : impl_(std::make_unique<Impl>(std::move(vocabulary), lm, options)) {}
WordSearch::~WordSearch() = default;
WordSearch::WordSearch(WordSearch&&) noexcept = default;
WordSearch& WordSearch::operator=(WordSearch&&) noexcept = default;

void WordSearch::push(const float* logits_row) { impl_->push(logits_row); }
void WordSearch::push(const float* logits, int64_t frames) {
  for (int64_t t = 0; t < frames; ++t) impl_->push(logits + t * kPhoneClasses);
}
std::vector<RecognizedWord> WordSearch::take_settled() { return std::exchange(impl_->settled, {}); }
std::vector<RecognizedWord> WordSearch::pending() const {
  std::vector<RecognizedWord> out;
  impl_->append_words(impl_->beam[0].words, out);
  return out;
}
WordSearchResult WordSearch::finish() { return impl_->finish(); }
void WordSearch::reset() { impl_->reset(); }
void WordSearch::prefetch() const { impl_->prefetch_search(); }
int64_t WordSearch::frames() const { return impl_->frame; }
LanguageModel use_grammar(const std::string& path, Lexicon& lexicon, WordSearchOptions& options) {
  Grammar g = read_grammar(path, lexicon);
  lexicon = std::move(g.lexicon);
  options.prune = -1e30f;
  return phrase_model(g.phrases, path);
}

int64_t WordSearch::vocabulary() const {
  int64_t n = 0;
  for (size_t i = 0; i < impl_->words.size(); ++i) n += impl_->words[i].spelling == int32_t(i);
  return n;
}

}  // namespace lt
