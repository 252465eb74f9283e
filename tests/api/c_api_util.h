// What the tests of lt.h share: handles that free themselves, and tokens.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lt.h"
#include "test_util.h"

namespace lt::test {

struct Model {
  lt_model* m = nullptr;
  explicit Model(const std::string& path, const char* device = "cpu", const char* precision = "fp32") {
    const lt_model_options options{device, precision};
    REQUIRE_MESSAGE(lt_model_load(path.c_str(), &options, &m) == LT_OK, std::string(lt_last_error()));
  }
  ~Model() { lt_model_free(m); }
};

struct State {
  lt_state* s = nullptr;
  ~State() { lt_state_free(s); }
};

inline std::vector<int32_t> random_tokens(Rng& rng, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = int32_t(rng.integer(0, 255));
  return v;
}

// Levenshtein distance between token sequences by the textbook recurrence:
// the reference the library's scores are held to.
inline int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = int64_t(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];
    row[0] = int64_t(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace lt::test
