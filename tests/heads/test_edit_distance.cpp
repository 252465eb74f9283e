// Levenshtein distance against its recursive definition, and the error
// counts of a phone error rate.
#include <functional>

#include "heads/edit_distance.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("edit distance equals the recursive definition on random short sequences") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> a, b;
    for (int64_t i = rng.integer(0, 6); i > 0; --i) a.push_back(int32_t(rng.integer(1, 3)));
    for (int64_t i = rng.integer(0, 6); i > 0; --i) b.push_back(int32_t(rng.integer(1, 3)));
    std::function<int64_t(size_t, size_t)> lev = [&](size_t i, size_t j) -> int64_t {
      if (i == 0) return int64_t(j);
      if (j == 0) return int64_t(i);
      return std::min({lev(i - 1, j) + 1, lev(i, j - 1) + 1, lev(i - 1, j - 1) + (a[i - 1] != b[j - 1])});
    };
    const int64_t want = lev(a.size(), b.size());
    CHECK(edit_distance(a.data(), int64_t(a.size()), b.data(), int64_t(b.size())) == want);
    ErrorCounts c;
    c.add(a, b);
    CHECK(c.errors == want);
    CHECK(c.substitutions + c.deletions + c.insertions == want);
    // Deletions and insertions balance the lengths.
    CHECK(int64_t(a.size()) - c.deletions + c.insertions == int64_t(b.size()));
  }
}

TEST_CASE("error counts sum over utterances: the rate is errors over reference symbols") {
  ErrorCounts c;
  c.add({1, 2, 3, 4}, {1, 3, 4});     // one deletion
  c.add({5, 6}, {5, 7, 6});           // one insertion
  c.add({1, 1, 1}, {2, 1, 1});        // one substitution
  CHECK(c.errors == 3);
  CHECK(c.reference == 9);
  CHECK(c.deletions == 1);
  CHECK(c.insertions == 1);
  CHECK(c.substitutions == 1);
  CHECK(c.rate() == doctest::Approx(3.0 / 9.0));
}
