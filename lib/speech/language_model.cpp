// Back-off scoring over the model's contexts (speech/language_model.h). Every
// history the model can use is a context with an id, its back-off weight and
// a suffix link; the n-grams are arcs (context, word) in one hash table. A score
// walks the suffix links from the state's context until an arc carries a
// probability, adding the back-off weights it passes: the Katz recursion
// without forming a single string.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "common/random.h"
#include "speech/language_model.h"

namespace lt {

int32_t LanguageModel::word_id(const std::string& word) const {
  std::string key;
  key.reserve(word.size());
  for (char c : word) key += char(std::toupper(static_cast<unsigned char>(c)));
  if (key == "<S>") return bos_;
  if (key == "</S>") return eos_;
  if (key == "<UNK>") return unk_;
  auto it = ids_.find(key);
  return it == ids_.end() ? -1 : it->second;
}

size_t LanguageModel::first_slot(uint64_t k, size_t slots) {
  return size_t(splitmix64(k)) & (slots - 1);  // ids are small and dense: every bit has to move the slot
}

size_t LanguageModel::find_slot(const Arc* table, size_t slots, uint64_t k) {
  const size_t mask = slots - 1;
  size_t i = first_slot(k, slots);
  // At most every slot once: a mapped copy's table may hold no empty one.
  for (size_t probes = 0; table[i].key != k && table[i].key != kNoArc; i = (i + 1) & mask)
    if (++probes == slots) return slots;
  return i;
}

const LanguageModel::Arc* LanguageModel::arc(int32_t context, int32_t word) const {
  if (arc_slots_ == 0) return nullptr;
  const size_t i = find_slot(arcs_, arc_slots_, key(context, word));
  if (i == arc_slots_ || arcs_[i].key == kNoArc) return nullptr;
  // Checked as it is used rather than when loaded: a mapped copy's million
  // slots are most of a start-up otherwise, and a short job reads a few.
  const Arc& a = arcs_[i];
  uint8_t has_prob;
  std::memcpy(&has_prob, &a.has_prob, 1);  // a bool's byte may hold anything in a damaged copy
  if (has_prob > 1 || a.next < -1 || size_t(int64_t(a.next) + 1) > context_count_ ||
      (has_prob && !(a.logp <= 0 && a.logp >= -kMaxLog)))
    throw Error(name_ + ": its binary copy " + copy_path_ + " is damaged at arc " + std::to_string(i) +
                "; remove it and the next load writes it again");
  return &a;
}

// The longest suffix of "context word" that is a context, of at most
// order - 1 words. Every context's prefixes are contexts, so the candidates
// are "s word" for s on the suffix chain of the context.
LmState LanguageModel::next_state(int32_t context, int32_t word) const {
  if (order_ < 2) return LmState{};
  int32_t s = context;
  while (contexts_[size_t(s)].length > order_ - 2) s = contexts_[size_t(s)].suffix;
  for (;;) {
    const Arc* a = arc(s, word);
    if (a && a->next >= 0) return LmState{a->next};
    if (s == 0) return LmState{};
    s = contexts_[size_t(s)].suffix;
  }
}

double LanguageModel::score(LmState from, int32_t word, LmState* to) const {
  if (word < 0 || size_t(word) >= words_.size())  // not check(): the search calls this per hypothesis and frame
    throw Error("LanguageModel::score: word id " + std::to_string(word) + " is outside the vocabulary of " +
                std::to_string(words_.size()));
  check(from.context >= 0 && size_t(from.context) < context_count_, "LanguageModel::score: not a state of this model");
  // One walk down the suffix links finds both the probability (the first
  // arc that has one, past the back-offs) and, for *to, next_state's answer
  // (the first arc that is a context, from the contexts short enough to
  // extend): each arc is a probe into a table of tens of MB, mostly a cache
  // miss, and the two walks visit the same arcs.
  double backoff = 0, logp = 0;
  bool scored = false, placed = to == nullptr || order_ < 2;
  if (to) *to = LmState{};
  for (int32_t c = from.context;;) {
    const Context& ctx = contexts_[size_t(c)];
    const Arc* a = arc(c, word);
    if (!scored && a && a->has_prob) logp = backoff + a->logp, scored = true;
    if (!placed && ctx.length <= order_ - 2 && a && a->next >= 0) *to = LmState{a->next}, placed = true;
    if (scored && placed) break;
    // Every word of the vocabulary has a unigram, so the walk ends at the
    // empty history at the latest.
    if (c == 0) {
      if (!scored) throw Error(name_ + ": word " + words_[size_t(word)] + " has no unigram");
      break;
    }
    if (!scored) backoff += ctx.backoff;
    c = ctx.suffix;
  }
  return logp;
}

double LanguageModel::max_score() const {
  const double known = max_score_->load(std::memory_order_relaxed);
  if (known >= 0) return known;
  // Every arc's probability is at most 1 (read_arpa refuses more).
  double most = 0;
  for (size_t i = 0; i < context_count_; ++i) {
    double gain = 0;
    for (int32_t c = int32_t(i);; c = contexts_[size_t(c)].suffix) {
      gain += std::max(0.0, contexts_[size_t(c)].backoff);
      if (c == 0) break;
    }
    most = std::max(most, gain);
  }
  max_score_->store(most, std::memory_order_relaxed);  // threads that race store the same
  return most;
}

LmState LanguageModel::state_of(const std::vector<int32_t>& history) const {
  LmState s;
  for (int32_t w : history) {
    check(w >= 0 && size_t(w) < words_.size(), "LanguageModel::state_of: word id " + std::to_string(w) +
                                                   " is outside the vocabulary");
    s = next_state(s.context, w);
  }
  return s;
}

std::vector<int32_t> LanguageModel::history(LmState state) const {
  check(state.context >= 0 && size_t(state.context) < context_count_, "LanguageModel::history: not a state of this model");
  std::vector<int32_t> words;
  for (int32_t c = state.context; c > 0; c = contexts_[size_t(c)].parent) words.push_back(contexts_[size_t(c)].word);
  std::reverse(words.begin(), words.end());
  return words;
}

}  // namespace lt
