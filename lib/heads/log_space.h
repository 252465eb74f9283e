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

// out[c] = log softmax(row)[c] in double, for the decoders' scores.
inline void log_softmax_row(const float* row, int64_t classes, std::vector<double>& out) {
  out.resize(size_t(classes));
  double m = row[0];
  for (int64_t c = 1; c < classes; ++c) m = std::max(m, double(row[c]));
  double s = 0;
  for (int64_t c = 0; c < classes; ++c) s += std::exp(double(row[c]) - m);
  const double lse = m + std::log(s);
  for (int64_t c = 0; c < classes; ++c) out[size_t(c)] = double(row[c]) - lse;
}

}  // namespace lt
