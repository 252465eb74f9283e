// Levenshtein distance by dynamic programming, and the counts behind an
// error rate. The table is kept whole so that one minimal alignment can be
// traced back for its substitutions, deletions and insertions.
#include "heads/edit_distance.h"

#include <algorithm>

namespace lt {
namespace {

// D[i][j]: distance between ref[0..i) and hyp[0..j); (n + 1) x (m + 1).
std::vector<int64_t> distance_table(const int32_t* ref, int64_t n, const int32_t* hyp, int64_t m) {
  std::vector<int64_t> D(size_t((n + 1) * (m + 1)));
  auto at = [&](int64_t i, int64_t j) -> int64_t& { return D[size_t(i * (m + 1) + j)]; };
  for (int64_t i = 0; i <= n; ++i) at(i, 0) = i;
  for (int64_t j = 0; j <= m; ++j) at(0, j) = j;
  for (int64_t i = 1; i <= n; ++i)
    for (int64_t j = 1; j <= m; ++j)
      at(i, j) = std::min({at(i - 1, j - 1) + (ref[i - 1] != hyp[j - 1]), at(i - 1, j) + 1, at(i, j - 1) + 1});
  return D;
}

}  // namespace

int64_t edit_distance(const int32_t* ref, int64_t n, const int32_t* hyp, int64_t m) {
  return distance_table(ref, n, hyp, m).back();
}

void ErrorCounts::add(const std::vector<int32_t>& ref, const std::vector<int32_t>& hyp) {
  const int64_t n = int64_t(ref.size()), m = int64_t(hyp.size());
  const std::vector<int64_t> D = distance_table(ref.data(), n, hyp.data(), m);
  auto at = [&](int64_t i, int64_t j) { return D[size_t(i * (m + 1) + j)]; };
  errors += at(n, m);
  reference += n;
  // Trace one minimal alignment back from the corner.
  for (int64_t i = n, j = m; i > 0 || j > 0;) {
    if (i > 0 && j > 0 && at(i, j) == at(i - 1, j - 1) + (ref[i - 1] != hyp[j - 1])) {
      substitutions += ref[i - 1] != hyp[j - 1];
      --i, --j;
    } else if (i > 0 && at(i, j) == at(i - 1, j) + 1) {
      ++deletions, --i;
    } else {
      ++insertions, --j;
    }
  }
}

double ErrorCounts::rate() const { return double(errors) / double(std::max<int64_t>(reference, 1)); }

}  // namespace lt
