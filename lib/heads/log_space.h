// Sums of probabilities kept as logarithms (CTC's recursions and decoders).
#pragma once
#include <cmath>
#include <limits>
#include <utility>

namespace lt {

constexpr double kLogZero = -std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)) without overflow, and without the NaN of -inf - -inf.
inline double log_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == kLogZero) return a;
  return a + std::log1p(std::exp(b - a));
}

}  // namespace lt
