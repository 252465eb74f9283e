// Brute-force CTC for tests: every alignment of T frames over C classes,
// collapsed (repeats merged, blanks dropped), in float64.
#pragma once
#include <cmath>
#include <map>
#include <vector>

namespace lt::test {

inline std::vector<int32_t> collapse(const std::vector<int32_t>& path) {
  std::vector<int32_t> out;
  int32_t prev = 0;
  for (int32_t c : path) {
    if (c != 0 && c != prev) out.push_back(c);
    prev = c;
  }
  return out;
}

// Softmax of each of T rows of C logits, in double.
inline std::vector<double> softmax_rows(const float* logits, int64_t T, int64_t C) {
  std::vector<double> p(size_t(T * C));
  for (int64_t t = 0; t < T; ++t) {
    double m = logits[t * C], s = 0;
    for (int64_t c = 1; c < C; ++c) m = std::max(m, double(logits[t * C + c]));
    for (int64_t c = 0; c < C; ++c) s += std::exp(double(logits[t * C + c]) - m);
    for (int64_t c = 0; c < C; ++c) p[size_t(t * C + c)] = std::exp(double(logits[t * C + c]) - m) / s;
  }
  return p;
}

// The probability of every label sequence some alignment emits.
inline std::map<std::vector<int32_t>, double> all_label_sequences(const float* logits, int64_t T, int64_t C) {
  const std::vector<double> p = softmax_rows(logits, T, C);
  std::map<std::vector<int32_t>, double> out;
  std::vector<int32_t> path(size_t(T), 0);
  for (;;) {
    double prob = 1;
    for (int64_t t = 0; t < T; ++t) prob *= p[size_t(t * C + path[size_t(t)])];
    out[collapse(path)] += prob;
    int64_t t = 0;
    while (t < T && ++path[size_t(t)] == C) path[size_t(t++)] = 0;
    if (t == T) break;
  }
  return out;
}

}  // namespace lt::test
