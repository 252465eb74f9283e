// The words of the search's hypotheses, as a tree: a hypothesis points at
// the entry of its last word, and entries point at their parents, so the
// beam's hypotheses share their common past. Entries are reference counted
// (by hypotheses and by children) and recycled through a free list, so a
// long stream reuses the same few entries instead of allocating per frame.
// Each entry carries a hash of its word sequence (not of its timings, nor of
// which pronunciation was heard), the key under which the search merges
// hypotheses with the same words.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu_prefetch.h"

namespace lt {

// splitmix64's finaliser: every input bit moves every output bit.
inline uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class WordHistory {
 public:
  struct Entry {
    int32_t parent;  // -1: the first word, or one whose past is settled
    int32_t word;      // the search's word: one pronunciation
    int32_t spelling;  // the same for every pronunciation of a word: what merging compares
    int32_t depth;   // words from the utterance's start to this one
    int32_t refs;    // -1 when free
    uint64_t hash;
    int64_t first_frame, last_frame;
  };
  static constexpr int32_t kNone = -1;  // no words yet
  static constexpr uint64_t kEmptyHash = 0x9e3779b97f4a7c15ull;

  const Entry& operator[](int32_t id) const { return entries_[size_t(id)]; }
  uint64_t hash(int32_t id) const { return id == kNone ? kEmptyHash : entries_[size_t(id)].hash; }
  int32_t depth(int32_t id) const { return id == kNone ? 0 : entries_[size_t(id)].depth; }

  // A new entry "parent word" with no references yet; sweep() frees it
  // unless a hypothesis acquired it by then.
  int32_t add(int32_t parent, int32_t word, int32_t spelling, int64_t first_frame, int64_t last_frame) {
    int32_t id;
    if (free_.empty()) {
      id = int32_t(entries_.size());
      entries_.emplace_back();
    } else {
      id = free_.back();
      free_.pop_back();
    }
    const uint64_t h = mix64(hash(parent) ^ mix64(uint64_t(uint32_t(spelling)) + 1));
    entries_[size_t(id)] = Entry{parent, word, spelling, depth(parent) + 1, 0, h, first_frame, last_frame};
    acquire(parent);
    fresh_.push_back(id);
    return id;
  }
  void acquire(int32_t id) {
    if (id != kNone) ++entries_[size_t(id)].refs;
  }
  void release(int32_t id) {
    while (id != kNone && --entries_[size_t(id)].refs == 0) {
      const int32_t parent = entries_[size_t(id)].parent;
      entries_[size_t(id)].refs = -1;
      free_.push_back(id);
      id = parent;
    }
  }
  // Frees the entries add() made that nothing took.
  void sweep() {
    for (int32_t id : fresh_)
      if (entries_[size_t(id)].refs == 0) {
        entries_[size_t(id)].refs = 1;
        release(id);
      }
    fresh_.clear();
  }
  // Whether the entries are mostly free: the array keeps its largest size
  // (a long stretch with nothing settled), and prefetch() asks for all of it.
  bool sparse() const {
    const size_t live = entries_.size() - free_.size();
    return entries_.size() > 2 * live + 64;
  }
  // Moves the entries in use to the front, in their order, and says where
  // each went (remap[old], kNone for a free one); the caller renumbers what
  // it holds. Between frames only: after sweep().
  void compact(std::vector<int32_t>& remap) {
    remap.assign(entries_.size(), kNone);
    int32_t n = 0;
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].refs >= 0) remap[i] = n++;
    for (size_t i = 0; i < entries_.size(); ++i) {  // remap[i] <= i: no entry is overwritten before it moves
      if (remap[i] == kNone) continue;
      Entry e = entries_[i];
      if (e.parent != kNone) e.parent = remap[size_t(e.parent)];
      entries_[size_t(remap[i])] = e;
    }
    entries_.resize(size_t(n));
    free_.clear();
  }
  static int32_t renumbered(const std::vector<int32_t>& remap, int32_t id) { return id == kNone ? kNone : remap[size_t(id)]; }
  // Forgets id's past (its words are settled and reported).
  void detach(int32_t id) {
    release(entries_[size_t(id)].parent);
    entries_[size_t(id)].parent = kNone;
  }
  // Whether a and b hold the same words (their timings may differ).
  bool same_words(int32_t a, int32_t b) const {
    if (depth(a) != depth(b)) return false;
    for (; a != b; a = entries_[size_t(a)].parent, b = entries_[size_t(b)].parent)
      if (a == kNone || b == kNone || entries_[size_t(a)].spelling != entries_[size_t(b)].spelling) return false;
    return true;
  }
  // id's ancestor (or itself) that holds the depth-th word.
  int32_t at_depth(int32_t id, int32_t depth) const {
    while (id != kNone && entries_[size_t(id)].depth > depth) id = entries_[size_t(id)].parent;
    return id;
  }
  // Asks for the entries ahead of a walk through them: in a stream group
  // the streams' searches run one after another, so each finds its entries
  // evicted by the others and would otherwise miss on every parent it chases.
  void prefetch() const { prefetch_bytes(entries_.data(), entries_.size() * sizeof(Entry)); }
  void clear() {
    entries_.clear();
    free_.clear();
    fresh_.clear();
  }

 private:
  std::vector<Entry> entries_;
  std::vector<int32_t> free_, fresh_;
};

}  // namespace lt
