// What the tests of lt.h share: handles that free themselves, and tokens.
#pragma once
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

}  // namespace lt::test
