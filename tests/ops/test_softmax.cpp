#include <cmath>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
std::vector<double> softmax_ref(const std::vector<double>& x, int64_t rows, int64_t C) {
  std::vector<double> y(rows * C);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x[r * C + c]);
    for (int64_t c = 0; c < C; ++c) s += y[r * C + c] = std::exp(x[r * C + c] - m);
    for (int64_t c = 0; c < C; ++c) y[r * C + c] /= s;
  }
  return y;
}
}  // namespace

TEST_CASE("softmax forward matches a float64 reference on large and masked inputs") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t max_rows : {7, 300}) {  // the second size takes the OpenMP path
    const int64_t N = rng.integer(1, 3), L = rng.integer(1, max_rows), C = rng.integer(1, 300);
    INFO("N " << N << " L " << L << " C " << C);
    // Scale 30: exp(x) alone would overflow, the max-subtracted form must not.
    std::vector<float> xv = rng.normals(N * L * C, 30.0);
    for (int64_t r = 0; r < N * L; ++r)  // a causal-style mask: -inf after a random column
      for (int64_t c = rng.integer(1, C); c < C; ++c) xv[r * C + c] = -INFINITY;
    Tensor x = Tensor::from_vector(xv, {N, L, C}), y = Tensor::empty({N, L, C});
    softmax_forward(x, y);
    CHECK(rel_error(y, softmax_ref(to_double(x), N * L, C)) < 1e-5);
  }
}

TEST_CASE("softmax backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t rows = rng.integer(1, 5), C = rng.integer(1, 11);
  Tensor x = rng.randn({rows, C}), y = Tensor::empty({rows, C}), dx = Tensor::empty({rows, C});
  std::vector<float> w = rng.normals(rows * C);
  auto loss = [&] {
    softmax_forward(x, y);
    return dot(y, w);
  };
  loss();
  softmax_backward(y, Tensor::from_vector(w, {rows, C}), dx);
  CHECK(rel_error(dx, numeric_grad(x, loss)) < 1e-3);
}

TEST_CASE("softmax backward on many rows matches a float64 analytic reference") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t rows = rng.integer(100, 2000), C = rng.integer(1, 200);
  Tensor x = rng.randn({rows, C}, 3.0), dy = rng.randn({rows, C});
  Tensor y = Tensor::empty({rows, C}), dx = Tensor::empty({rows, C});
  softmax_forward(x, y);
  softmax_backward(y, dy, dx);
  auto yv = softmax_ref(to_double(x), rows, C), dyv = to_double(dy);
  std::vector<double> ref(rows * C);
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t c = 0; c < C; ++c) dot += yv[r * C + c] * dyv[r * C + c];
    for (int64_t c = 0; c < C; ++c) ref[r * C + c] = yv[r * C + c] * (dyv[r * C + c] - dot);
  }
  CHECK(rel_error(dx, ref) < 1e-5);
}

TEST_CASE("softmax rejects mismatched shapes") {
  Tensor x = Tensor::zeros({2, 3}), y = Tensor::zeros({3, 2});
  CHECK_THROWS_WITH_AS(softmax_forward(x, y), doctest::Contains("expected shape [2, 3], got [3, 2]"), lt::Error);
}
