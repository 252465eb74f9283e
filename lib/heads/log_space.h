// Sums of probabilities kept as logarithms (CTC's recursions and decoders).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace lt {

constexpr double kLogZero = -std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)) without overflow, and without the NaN of -inf - -inf.
inline double log_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == kLogZero) return a;
  return a + std::log1p(std::exp(b - a));
}

// out = the log-softmax of n logits, in double (the decoders' per-frame scores).
inline void log_softmax_row(const float* logits, int64_t n, std::vector<double>& out) {
  out.resize(size_t(n));
  double m = logits[0];
  for (int64_t c = 1; c < n; ++c) m = std::max(m, double(logits[c]));
  double s = 0;
  for (int64_t c = 0; c < n; ++c) s += std::exp(double(logits[c]) - m);
  const double lse = m + std::log(s);
  for (int64_t c = 0; c < n; ++c) out[size_t(c)] = double(logits[c]) - lse;
}

}  // namespace lt
