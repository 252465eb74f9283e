// Training-set statistics of the filterbank, and the normalisation with
// them. Per-utterance statistics cannot stream (they need the whole
// utterance first); the training set's are fixed and stored in the model.
#include <algorithm>
#include <cmath>
#include <string>

#include "audio/fbank.h"
#include "common/error.h"

namespace lt {

FeatureStats::FeatureStats(int b) : bins(b), sum(size_t(b), 0.0), sum_sq(size_t(b), 0.0) {}

void FeatureStats::add(const float* frames, int64_t n) {
  for (int64_t t = 0; t < n; ++t)
    for (int b = 0; b < bins; ++b) {
      const double v = frames[t * bins + b];
      sum[size_t(b)] += v;
      sum_sq[size_t(b)] += v * v;
    }
  count += n;
}

void FeatureStats::merge(const FeatureStats& other) {
  check(other.bins == bins, "feature statistics of " + std::to_string(other.bins) + " and " + std::to_string(bins) +
                                " bins do not merge");
  for (int b = 0; b < bins; ++b) {
    sum[size_t(b)] += other.sum[size_t(b)];
    sum_sq[size_t(b)] += other.sum_sq[size_t(b)];
  }
  count += other.count;
}

std::vector<float> FeatureStats::mean() const {
  check(count > 0, "feature statistics of no frames");
  std::vector<float> m(static_cast<size_t>(bins));
  for (int b = 0; b < bins; ++b) m[size_t(b)] = float(sum[size_t(b)] / double(count));
  return m;
}

std::vector<float> FeatureStats::inv_std() const {
  check(count > 0, "feature statistics of no frames");
  std::vector<float> s(static_cast<size_t>(bins));
  for (int b = 0; b < bins; ++b) {
    const double mu = sum[size_t(b)] / double(count);
    const double var = std::max(sum_sq[size_t(b)] / double(count) - mu * mu, 1e-6);
    s[size_t(b)] = float(1.0 / std::sqrt(var));
  }
  return s;
}

void normalize_features(float* frames, int64_t n, int bins, const float* mean, const float* inv_std) {
  for (int64_t t = 0; t < n; ++t)
    for (int b = 0; b < bins; ++b) frames[t * bins + b] = (frames[t * bins + b] - mean[b]) * inv_std[b];
}

}  // namespace lt
