// The bf16 matrix product against float64 products of the bf16-rounded
// operands (what is left is the order of the fp32 sums), for every
// transposition, ragged edges and several k blocks; and the linear layer
// through it.
#include <cmath>

#include "backend/cpu_bf16_gemm.h"
#include "common/error.h"
#include "ops/ops.h"
#include "ops/packed_linear.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
bool skip_without_bf16() {
  if (cpu_has_bf16()) return false;
  std::printf("LT-SKIP: this CPU lacks AVX512_BF16\n");
  return true;
}
}  // namespace

TEST_CASE("bf16 gemm equals a float64 product of the rounded operands, for every transposition") {
  if (skip_without_bf16()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int trial = 0; trial < 16; ++trial) {
    const bool ta = trial & 1, tb = trial & 2, accumulate = trial & 4;
    // Past 1,024 values of k the product runs in blocks; odd k pads a pair.
    const int64_t m = rng.integer(1, 40), n = rng.integer(1, 90), k = trial >= 8 ? rng.integer(1025, 2600) : rng.integer(1, 60);
    const int64_t lda = (ta ? m : k) + rng.integer(0, 3), ldb = (tb ? k : n) + rng.integer(0, 3), ldc = n + rng.integer(0, 3);
    INFO("trans " << ta << tb << " m " << m << " n " << n << " k " << k << " accumulate " << accumulate);
    const std::vector<float> A = rng.normals((ta ? k : m) * lda, 2.0), B = rng.normals((tb ? n : k) * ldb, 0.5);
    std::vector<float> C = rng.normals(m * ldc);
    const std::vector<float> C0 = C;
    cpu::bf16_gemm(ta, tb, m, n, k, A.data(), lda, B.data(), ldb, accumulate, C.data(), ldc);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = accumulate ? C0[i * ldc + j] : 0, scale = std::fabs(want);
        for (int64_t l = 0; l < k; ++l) {
          const double a = bf16_round(ta ? A[l * lda + i] : A[i * lda + l]);
          const double b = bf16_round(tb ? B[j * ldb + l] : B[l * ldb + j]);
          want += a * b;
          scale += std::fabs(a * b);
        }
        // fp32 sums stay within ~1e-6 of scale; one operand rounded wrongly costs ~1e-3.
        REQUIRE(std::fabs(C[i * ldc + j] - want) <= 1e-5 * scale + 1e-30);
      }
    for (int64_t i = 0; i < m; ++i)  // the padding between rows of C is left alone
      for (int64_t j = n; j < ldc; ++j) REQUIRE(C[i * ldc + j] == C0[i * ldc + j]);
  }
}

TEST_CASE("bf16 gemm gives the same bits on any number of threads") {
  if (skip_without_bf16()) return;
  Rng rng(fresh_seed());
  const int64_t m = 203, n = 77, k = 611;
  const std::vector<float> A = rng.normals(m * k), B = rng.normals(k * n);
  std::vector<float> many(m * n), one(m * n);
  cpu::bf16_gemm(false, false, m, n, k, A.data(), k, B.data(), n, false, many.data(), n);
  const int threads = num_threads();
  set_num_threads(1);
  cpu::bf16_gemm(false, false, m, n, k, A.data(), k, B.data(), n, false, one.data(), n);
  set_num_threads(threads);
  CHECK(many == one);
}

TEST_CASE("linear layer with bf16 products: forward and gradients of the rounded operands, unless fp32 is asked") {
  if (skip_without_bf16()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t rows = rng.integer(1, 300), in = rng.integer(1, 100), out = rng.integer(1, 100);
  Tensor x = rng.randn({rows, in}), W = rng.randn({out, in}, 0.2), b = rng.randn({out}), dy = rng.randn({rows, out});
  Tensor y = Tensor::empty({rows, out}), dx = Tensor::empty({rows, in}), dW = rng.randn({out, in}), db = Tensor::zeros({out});
  const std::vector<float> dW0 = dW.to_vector();
  linear_forward(x, W, b, y, Products::bf16);
  linear_backward(x, W, dy, dx, dW, db, Products::bf16);
  const std::vector<float> xv = x.to_vector(), Wv = W.to_vector(), bv = b.to_vector(), dyv = dy.to_vector();
  std::vector<double> y_want(rows * out), dx_want(rows * in, 0.0), dW_want(dW0.begin(), dW0.end());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = bv[o];
      for (int64_t i = 0; i < in; ++i) {
        s += bf16_round(xv[r * in + i]) * bf16_round(Wv[o * in + i]);
        dx_want[r * in + i] += bf16_round(dyv[r * out + o]) * bf16_round(Wv[o * in + i]);
        dW_want[o * in + i] += bf16_round(dyv[r * out + o]) * bf16_round(xv[r * in + i]);
      }
      y_want[r * out + o] = s;
    }
  CHECK(rel_error(y, y_want) < 1e-5);
  CHECK(rel_error(dx, dx_want) < 1e-5);
  CHECK(rel_error(dW, dW_want) < 1e-5);
  // The bias gradient needs no product: exact sums of dy.
  std::vector<double> db_want(out, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) db_want[o] += dyv[r * out + o];
  CHECK(rel_error(db, db_want) < 1e-5);

  // The precision is the call's alone: an fp32 call after a bf16 one gives
  // OpenBLAS's fp32 products bitwise.
  auto run = [&](Products products) {
    Tensor y = Tensor::empty({rows, out}), dx = Tensor::empty({rows, in}), dW = Tensor::zeros({out, in}),
           db = Tensor::zeros({out});
    linear_forward(x, W, b, y, products);
    linear_backward(x, W, dy, dx, dW, db, products);
    return std::vector<std::vector<float>>{y.to_vector(), dx.to_vector(), dW.to_vector()};
  };
  const auto fp32 = run(Products::fp32);
  CHECK(run(Products::bf16)[0] != fp32[0]);
  CHECK(run(Products::fp32) == fp32);
  // A precision the device cannot run is refused.
  CHECK_THROWS_WITH_AS(linear_forward(x, W, b, y, Products::tf32), doctest::Contains("tf32 products need CUDA"),
                       lt::Error);
}
