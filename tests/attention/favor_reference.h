// A float64 FAVOR+ reference for the tests, built on a map's own projection.
#pragma once
#include <cmath>
#include <vector>

#include "attention/feature_map.h"
#include "test_util.h"

namespace lt::test {

inline std::vector<double> omega_of(const FeatureMap& phi) { return to_double(phi.tensors().at("omega")); }

// phi(x) = [exp(w_j . x~ - |x~|^2/2), exp(-w_j . x~ - |x~|^2/2)] / sqrt(F), x~ = E^(-1/4) x,
// w_j column j of omega [E, F/2]: Lemma 1 of the Performer in its hyperbolic form.
inline std::vector<double> favor_reference(const std::vector<double>& x, const std::vector<double>& omega,
                                           int64_t E, int64_t F) {
  const int64_t P = F / 2, rows = int64_t(x.size()) / E;
  const double c = std::pow(double(E), -0.25);
  std::vector<double> y(size_t(rows * F));
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int64_t e = 0; e < E; ++e) sq += c * x[r * E + e] * c * x[r * E + e];
    for (int64_t j = 0; j < P; ++j) {
      double u = 0;
      for (int64_t e = 0; e < E; ++e) u += c * x[r * E + e] * omega[e * P + j];
      y[r * F + j] = std::exp(u - sq / 2) / std::sqrt(double(F));
      y[r * F + P + j] = std::exp(-u - sq / 2) / std::sqrt(double(F));
    }
  }
  return y;
}

}  // namespace lt::test
