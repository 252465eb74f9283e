// Edit distance between symbol sequences, and error rates over many: the
// phone error rate (PER) of speech recognition is the Levenshtein distance
// over phones divided by the reference's phones, summed over utterances.
#pragma once
#include <cstdint>
#include <vector>

namespace lt {

// Levenshtein distance: the fewest substitutions, deletions and insertions
// (unit costs) that turn ref [n] into hyp [m].
int64_t edit_distance(const int32_t* ref, int64_t n, const int32_t* hyp, int64_t m);

struct ErrorCounts {
  int64_t errors = 0, reference = 0;
  int64_t substitutions = 0, deletions = 0, insertions = 0;  // of one minimal alignment per utterance
  // One utterance: its distance and the kinds of edit in a minimal alignment.
  void add(const std::vector<int32_t>& ref, const std::vector<int32_t>& hyp);
  // errors / reference (errors alone when there is no reference).
  double rate() const;
};

}  // namespace lt
