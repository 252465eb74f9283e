// PackedLinear against a float64 product of the operands (rounded to bf16
// first for bf16): what is left is the order of the fp32 sums.
#include <cmath>

#include "common/error.h"
#include "ops/packed_linear.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
bool skip_without(Products p) {
  if (p == Products::bf16 ? cpu_has_bf16() : cpu_has_avx512()) return false;
  std::printf("LT-SKIP: this CPU lacks %s\n", p == Products::bf16 ? "AVX512_BF16" : "AVX-512");
  return true;
}
}  // namespace

TEST_CASE("packed linear equals a float64 product (fp32, and bf16 of the rounded operands)") {
  for (Products prec : {Products::fp32, Products::bf16}) {
    if (skip_without(prec)) continue;
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << products_name(prec));
    Rng rng(seed);
    for (int trial = 0; trial < 12; ++trial) {
      // Every third trial a multiple of 32 inputs: bf16 on AMX (where the CPU has it).
      const int64_t rows = trial < 4 ? 64 : rng.integer(1, 40), out = rng.integer(1, 100);
      const int64_t in = trial % 3 == 1 ? 32 * rng.integer(1, 9) : rng.integer(1, 300);
      const bool bias = trial % 2 == 0, relu = trial % 3 == 0;
      INFO("rows " << rows << " in " << in << " out " << out << " bias " << bias << " relu " << relu);
      Tensor x = rng.randn({rows, in}, 2.0), W = rng.randn({out, in}, 0.3), b = bias ? rng.randn({out}) : Tensor();
      Tensor y = Tensor::empty({rows, out});
      PackedLinear(W, prec).forward(x, b, y, relu);
      const std::vector<float> xv = x.to_vector(), wv = W.to_vector(), got = y.to_vector();
      const std::vector<float> bv = bias ? b.to_vector() : std::vector<float>(out, 0.f);
      auto op = [&](float v) { return prec == Products::bf16 ? bf16_round(v) : double(v); };
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out; ++o) {
          double want = bv[o], scale = std::fabs(bv[o]);
          for (int64_t i = 0; i < in; ++i) {
            const double term = op(xv[r * in + i]) * op(wv[o * in + i]);
            want += term;
            scale += std::fabs(term);
          }
          if (relu) want = std::max(want, 0.0);
          // fp32 sums stay within ~1e-6 of scale; one operand rounded wrongly costs ~1e-3.
          REQUIRE(std::fabs(got[r * out + o] - want) <= 1e-5 * scale + 1e-30);
        }
    }
  }
}

TEST_CASE("packed linear: a row's output is the same bits in any batch, at any place in it") {
  // What a pool of streams relies on: a stream's products do not depend on
  // which others share its step. Batches that pad AMX's 16-row tiles
  // differently, around the same row.
  for (Products prec : {Products::fp32, Products::bf16}) {
    if (skip_without(prec)) continue;
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << products_name(prec));
    Rng rng(seed);
    for (int64_t in : {int64_t(192), rng.integer(1, 300)}) {
      const int64_t out = rng.integer(1, 100);
      INFO("in " << in << " out " << out);
      PackedLinear L(rng.randn({out, in}, 0.3), prec);
      const Tensor b = rng.randn({out}), row = rng.randn({1, in});
      Tensor alone = Tensor::empty({1, out});
      L.forward(row, b, alone);
      for (int64_t rows : {int64_t(2), int64_t(15), int64_t(17), int64_t(33), rng.integer(2, 70)}) {
        const int64_t at = rng.integer(0, rows - 1);
        Tensor x = rng.randn({rows, in}), y = Tensor::empty({rows, out});
        x.rows(at, at + 1).copy_from(row);
        L.forward(x, b, y);
        CHECK(y.rows(at, at + 1).to_vector() == alone.to_vector());
      }
    }
  }
}

TEST_CASE("packed linear keeps leading axes, ignores the thread count and rejects mismatched shapes") {
  for (Products prec : {Products::fp32, Products::bf16}) {
    if (skip_without(prec)) continue;
    Rng rng(fresh_seed());
    Tensor W = rng.randn({70, 17}), x = rng.randn({2, 9, 17}), y = Tensor::empty({2, 9, 70});
    PackedLinear L(W, prec);
    CHECK(L.in() == 17);
    CHECK(L.out() == 70);
    L.forward(x, Tensor(), y);
    Tensor flat = Tensor::empty({18, 70});
    const int threads = num_threads();
    set_num_threads(1);
    L.forward(x.reshape({18, 17}), Tensor(), flat);
    set_num_threads(threads);
    CHECK(y.to_vector() == flat.to_vector());
    Tensor wrong_in = rng.randn({18, 16}), wrong_out = Tensor::empty({18, 71});
    CHECK_THROWS_AS(L.forward(wrong_in, Tensor(), flat), Error);
    CHECK_THROWS_AS(L.forward(x, Tensor(), wrong_out), Error);
    CHECK_THROWS_AS(L.forward(x, rng.randn({69}), y), Error);
  }
}

TEST_CASE("packed linear repacks new weights into its storage as a fresh packing would, and rejects a new shape") {
  for (Products prec : {Products::fp32, Products::bf16}) {
    if (skip_without(prec)) continue;
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << products_name(prec));
    Rng rng(seed);
    const int64_t in = rng.integer(1, 90), out = rng.integer(1, 90);  // odd sizes leave padded panels and pairs
    Tensor x = rng.randn({5, in}), b = rng.randn({out}), again = Tensor::empty({5, out}), fresh = again.clone();
    PackedLinear L(rng.randn({out, in}), prec);
    const Tensor W = rng.randn({out, in});
    L.repack(W);
    L.forward(x, b, again);
    PackedLinear(W, prec).forward(x, b, fresh);
    CHECK(again.to_vector() == fresh.to_vector());
    CHECK_THROWS_WITH_AS(L.repack(rng.randn({out + 1, in})), doctest::Contains("to repack must be"), Error);
  }
}
