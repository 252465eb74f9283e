#include <algorithm>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("linear forward matches a float64 reference") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 4), L = rng.integer(1, 33), in = rng.integer(1, 70), out = rng.integer(1, 70);
  Tensor x = rng.randn({N, L, in}), W = rng.randn({out, in}, 0.2), b = rng.randn({out});
  Tensor y = Tensor::empty({N, L, out});
  linear_forward(x, W, b, y);

  auto xv = to_double(x), Wv = to_double(W), bv = to_double(b);
  std::vector<double> ref(N * L * out);
  for (int64_t r = 0; r < N * L; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = bv[o];
      for (int64_t i = 0; i < in; ++i) s += xv[r * in + i] * Wv[o * in + i];
      ref[r * out + o] = s;
    }
  CHECK(rel_error(y, ref) < 1e-5);

  Tensor nobias;
  linear_forward(x, W, nobias, y);
  for (int64_t r = 0; r < N * L; ++r)
    for (int64_t o = 0; o < out; ++o) ref[r * out + o] -= bv[o];
  CHECK(rel_error(y, ref) < 1e-5);
}

TEST_CASE("linear relu forward is max(0, .) of the float64 product") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t rows = rng.integer(1, 70), in = rng.integer(1, 70), out = rng.integer(1, 70);
  INFO("rows " << rows << " in " << in << " out " << out);
  Tensor x = rng.randn({rows, in}), W = rng.randn({out, in}, 0.2), b = rng.randn({out});
  Tensor y = Tensor::empty({rows, out});
  for (bool bias : {true, false}) {
    linear_relu_forward(x, W, bias ? b : Tensor(), y);
    auto xv = to_double(x), Wv = to_double(W), bv = to_double(b);
    std::vector<double> ref(rows * out);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double s = bias ? bv[o] : 0.0;
        for (int64_t i = 0; i < in; ++i) s += xv[r * in + i] * Wv[o * in + i];
        ref[r * out + o] = std::max(s, 0.0);
      }
    CHECK(rel_error(y, ref) < 1e-5);
  }
}

TEST_CASE("linear backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t rows = rng.integer(1, 6), in = rng.integer(1, 9), out = rng.integer(1, 9);
  Tensor x = rng.randn({rows, in}), W = rng.randn({out, in}), b = rng.randn({out});
  std::vector<float> w = rng.normals(rows * out);
  Tensor y = Tensor::empty({rows, out});
  auto loss = [&] {
    linear_forward(x, W, b, y);
    return dot(y, w);
  };
  Tensor dy = Tensor::from_vector(w, {rows, out});
  Tensor dx = Tensor::empty({rows, in}), dW = Tensor::zeros({out, in}), db = Tensor::zeros({out});
  linear_backward(x, W, dy, dx, dW, db);
  CHECK(rel_error(dx, numeric_grad(x, loss)) < 1e-3);
  CHECK(rel_error(dW, numeric_grad(W, loss)) < 1e-3);
  CHECK(rel_error(db, numeric_grad(b, loss)) < 1e-3);

  // Parameter gradients accumulate.
  std::vector<float> before = dW.to_vector();
  Tensor no_dx;
  linear_backward(x, W, dy, no_dx, dW, db);
  std::vector<double> twice(before.begin(), before.end());
  for (auto& v : twice) v *= 2;
  CHECK(rel_error(dW, twice) < 1e-6);
}

TEST_CASE("linear rejects mismatched shapes with a message naming them") {
  Tensor x = Tensor::zeros({2, 3}), W = Tensor::zeros({4, 5}), b, y = Tensor::zeros({2, 4});
  CHECK_THROWS_WITH_AS(linear_forward(x, W, b, y),
                       doctest::Contains("input [2, 3] does not end in the weight's in-features 5"), lt::Error);
}
