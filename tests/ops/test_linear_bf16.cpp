// LinearBf16 against a float64 product of the bf16-rounded operands: the only
// difference left is the order of the fp32 sums.
#include <cmath>

#include "lt/error.h"
#include "lt/linear_bf16.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// Round to the nearest value with 8 significant bits, ties to even (bf16).
double bf16(float f) {
  if (f == 0) return 0;
  int e;
  const double m = std::frexp(double(f), &e);  // |m| in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
}

bool skip_without_bf16() {
  if (cpu_has_bf16()) return false;
  std::printf("LT-SKIP: this CPU lacks AVX512_BF16\n");
  return true;
}
}  // namespace

TEST_CASE("bf16 linear equals a float64 product of the rounded operands") {
  if (skip_without_bf16()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t rows = trial < 4 ? 64 : rng.integer(1, 40), in = rng.integer(1, 300), out = rng.integer(1, 100);
    const bool bias = trial % 2 == 0, relu = trial % 3 == 0;
    INFO("rows " << rows << " in " << in << " out " << out << " bias " << bias << " relu " << relu);
    Tensor x = rng.randn({rows, in}, 2.0), W = rng.randn({out, in}, 0.3), b = bias ? rng.randn({out}) : Tensor();
    Tensor y = Tensor::empty({rows, out});
    LinearBf16(W).forward(x, b, y, relu);
    const std::vector<float> xv = x.to_vector(), wv = W.to_vector(), got = y.to_vector();
    const std::vector<float> bv = bias ? b.to_vector() : std::vector<float>(out, 0.f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double want = bv[o], scale = std::fabs(bv[o]);
        for (int64_t i = 0; i < in; ++i) {
          const double term = bf16(xv[r * in + i]) * bf16(wv[o * in + i]);
          want += term;
          scale += std::fabs(term);
        }
        if (relu) want = std::max(want, 0.0);
        REQUIRE(std::fabs(got[r * out + o] - want) <= 1e-5 * scale + 1e-30);  // rounding one operand wrongly costs ~1e-3
      }
  }
}

TEST_CASE("bf16 linear keeps leading axes and rejects mismatched shapes") {
  if (skip_without_bf16()) return;
  Rng rng(fresh_seed());
  Tensor W = rng.randn({40, 17}), x = rng.randn({2, 3, 17}), y = Tensor::empty({2, 3, 40});
  LinearBf16 L(W);
  CHECK(L.in() == 17);
  CHECK(L.out() == 40);
  L.forward(x, Tensor(), y);
  Tensor flat = Tensor::empty({6, 40});
  L.forward(x.reshape({6, 17}), Tensor(), flat);
  CHECK(y.to_vector() == flat.to_vector());
  Tensor wrong_in = rng.randn({6, 16}), wrong_out = Tensor::empty({6, 41});
  CHECK_THROWS_AS(L.forward(wrong_in, Tensor(), flat), Error);
  CHECK_THROWS_AS(L.forward(x, Tensor(), wrong_out), Error);
  CHECK_THROWS_AS(L.forward(x, rng.randn({39}), y), Error);
}
