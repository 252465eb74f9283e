#include <cmath>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// float64 LayerNorm of every row: y, mean, rstd (biased variance, eps inside the root).
struct LayerNormRef {
  std::vector<double> y, mean, rstd;
};
LayerNormRef layernorm_ref(const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& b,
                           int64_t rows, int64_t C) {
  LayerNormRef r{std::vector<double>(rows * C), std::vector<double>(rows), std::vector<double>(rows)};
  for (int64_t i = 0; i < rows; ++i) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < C; ++c) m += x[i * C + c];
    m /= C;
    for (int64_t c = 0; c < C; ++c) v += (x[i * C + c] - m) * (x[i * C + c] - m);
    const double rs = 1 / std::sqrt(v / C + 1e-5);
    for (int64_t c = 0; c < C; ++c) r.y[i * C + c] = (x[i * C + c] - m) * rs * g[c] + b[c];
    r.mean[i] = m;
    r.rstd[i] = rs;
  }
  return r;
}
}  // namespace

TEST_CASE("layernorm forward matches a float64 reference") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t max_rows : {9, 400}) {  // the second size takes the OpenMP path
    const int64_t N = rng.integer(1, 3), L = rng.integer(1, max_rows), C = rng.integer(2, 300);
    INFO("N " << N << " L " << L << " C " << C);
    std::vector<float> xv = rng.normals(N * L * C, 2.0);
    for (auto& v : xv) v += 5.f;  // an offset the two-pass variance must not lose
    Tensor x = Tensor::from_vector(xv, {N, L, C}), g = rng.randn({C}), b = rng.randn({C});
    Tensor y = Tensor::empty({N, L, C}), mean = Tensor::empty({N * L}), rstd = Tensor::empty({N * L});
    layernorm_forward(x, g, b, y, mean, rstd);
    LayerNormRef ref = layernorm_ref(to_double(x), to_double(g), to_double(b), N * L, C);
    CHECK(rel_error(y, ref.y) < 1e-5);
    CHECK(rel_error(mean, ref.mean) < 1e-5);
    CHECK(rel_error(rstd, ref.rstd) < 1e-5);
  }
}

TEST_CASE("residual layernorm is the layernorm of the float64 sum") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t max_rows : {9, 400}) {
    const int64_t rows = rng.integer(1, max_rows), C = rng.integer(2, 300);
    INFO("rows " << rows << " C " << C);
    Tensor x = rng.randn({rows, C}, 2.0), res = rng.randn({rows, C}, 3.0), g = rng.randn({C}), b = rng.randn({C});
    Tensor y = Tensor::empty({rows, C});
    residual_layernorm_forward(x, res, g, b, y);
    std::vector<double> sum = to_double(x), rv = to_double(res);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += rv[i];
    CHECK(rel_error(y, layernorm_ref(sum, to_double(g), to_double(b), rows, C).y) < 1e-5);

    // The same floats as add, then layernorm_forward.
    Tensor s = Tensor::empty({rows, C}), y2 = Tensor::empty({rows, C});
    Tensor mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
    add(x, res, s);
    layernorm_forward(s, g, b, y2, mean, rstd);
    CHECK(y.to_vector() == y2.to_vector());
  }
  Tensor x = Tensor::zeros({2, 4}), g = Tensor::zeros({4}), y = Tensor::zeros({2, 4});
  CHECK_THROWS_WITH_AS(residual_layernorm_forward(x, Tensor::zeros({2, 3}), g, g, y),
                       doctest::Contains("residual_layernorm_forward residual: expected shape [2, 4], got [2, 3]"),
                       lt::Error);
}

TEST_CASE("layernorm backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // C >= 3: with two channels xhat = +-1 whatever x is, and dx is ~0.
  const int64_t rows = rng.integer(1, 5), C = rng.integer(3, 9);
  INFO("rows " << rows << " C " << C);
  Tensor x = rng.randn({rows, C}), g = rng.randn({C}), b = rng.randn({C});
  std::vector<float> w = rng.normals(rows * C);
  Tensor y = Tensor::empty({rows, C}), mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
  auto loss = [&] {
    layernorm_forward(x, g, b, y, mean, rstd);
    return dot(y, w);
  };
  loss();
  Tensor dy = Tensor::from_vector(w, {rows, C}), dx = Tensor::empty({rows, C});
  Tensor dg = Tensor::zeros({C}), db = Tensor::zeros({C});
  layernorm_backward(x, g, mean, rstd, dy, dx, dg, db);
  CHECK(rel_error(dx, numeric_grad(x, loss, 1e-3)) < 1e-2);
  CHECK(rel_error(dg, numeric_grad(g, loss)) < 1e-3);
  CHECK(rel_error(db, numeric_grad(b, loss)) < 1e-3);
}

TEST_CASE("layernorm backward on many rows matches a float64 analytic reference and accumulates") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // C >= 3: at C = 2 the exact dx is ~eps-sized, a cancellation float cannot resolve.
  const int64_t rows = rng.integer(200, 3000), C = rng.integer(3, 130);
  INFO("rows " << rows << " C " << C);
  Tensor x = rng.randn({rows, C}), g = rng.randn({C}), b = rng.randn({C}), dy = rng.randn({rows, C});
  Tensor y = Tensor::empty({rows, C}), mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
  layernorm_forward(x, g, b, y, mean, rstd);
  Tensor dx = Tensor::empty({rows, C}), dg = rng.randn({C}), db = rng.randn({C});
  std::vector<double> dg_ref = to_double(dg), db_ref = to_double(db);
  layernorm_backward(x, g, mean, rstd, dy, dx, dg, db);

  auto xv = to_double(x), gv = to_double(g), dyv = to_double(dy);
  LayerNormRef ref = layernorm_ref(xv, gv, to_double(b), rows, C);
  std::vector<double> dx_ref(rows * C), xhat(C);
  for (int64_t r = 0; r < rows; ++r) {
    double sg = 0, sgx = 0;
    for (int64_t c = 0; c < C; ++c) {
      xhat[c] = (xv[r * C + c] - ref.mean[r]) * ref.rstd[r];
      sg += dyv[r * C + c] * gv[c];
      sgx += dyv[r * C + c] * gv[c] * xhat[c];
      dg_ref[c] += dyv[r * C + c] * xhat[c];
      db_ref[c] += dyv[r * C + c];
    }
    for (int64_t c = 0; c < C; ++c)
      dx_ref[r * C + c] = ref.rstd[r] * (dyv[r * C + c] * gv[c] - sg / C - xhat[c] * sgx / C);
  }
  CHECK(rel_error(dx, dx_ref) < 1e-5);
  CHECK(rel_error(dg, dg_ref) < 1e-5);
  CHECK(rel_error(db, db_ref) < 1e-5);
}

TEST_CASE("layernorm rejects mismatched shapes with a message naming them") {
  Tensor x = Tensor::zeros({2, 3}), g = Tensor::zeros({4}), b = Tensor::zeros({3}), y = Tensor::zeros({2, 3});
  Tensor mean = Tensor::zeros({2}), rstd = Tensor::zeros({2});
  CHECK_THROWS_WITH_AS(layernorm_forward(x, g, b, y, mean, rstd),
                       doctest::Contains("gamma: expected shape [3], got [4]"), lt::Error);
  Tensor g3 = Tensor::zeros({3}), mean3 = Tensor::zeros({3});
  CHECK_THROWS_WITH_AS(layernorm_forward(x, g3, b, y, mean3, rstd), doctest::Contains("mean [3]"), lt::Error);
}
