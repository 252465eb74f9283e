#include <cmath>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("dropout keeps about 1 - p of a large tensor scaled by 1 / (1 - p)") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = 1 << 20;
  const float p = float(rng.uniform(0.05, 0.9));
  INFO("p " << p);
  const uint64_t mask_seed = uint64_t(rng.integer(0, 1 << 30));
  Tensor x = Tensor::from_vector(std::vector<float>(n, 1.f), {n}), y = Tensor::empty({n});
  dropout_forward(x, p, mask_seed, y);
  std::vector<float> yv = y.to_vector();
  int64_t dropped = 0;
  double mean = 0;
  for (float v : yv) {
    if (v == 0.f) ++dropped;
    else CHECK(v == 1.f / (1.f - p));
    mean += v;
  }
  mean /= n;
  // 6 standard deviations of a binomial fraction over 2^20 draws.
  const double sd = std::sqrt(p * (1 - p) / n);
  CHECK(std::fabs(double(dropped) / n - p) < 6 * sd);
  CHECK(std::fabs(mean - 1) < 6 * sd / (1 - p));  // inverted dropout keeps the expectation
}

TEST_CASE("dropout masks are a pure function of the seed and the element index") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = rng.integer(20000, 100000), k = rng.integer(1, n);
  const float p = 0.5f;
  const uint64_t s = uint64_t(rng.integer(0, 1 << 30));
  Tensor x = rng.randn({n}), y1 = Tensor::empty({n}), y2 = Tensor::empty({n}), y3 = Tensor::empty({n});
  dropout_forward(x, p, s, y1);
  dropout_forward(x, p, s, y2);
  CHECK(y1.to_vector() == y2.to_vector());

  // A prefix of the tensor gets the prefix of the mask.
  Tensor head = x.rows(0, k).clone(), yk = Tensor::empty({k});
  dropout_forward(head, p, s, yk);
  std::vector<float> y1v = y1.to_vector(), ykv = yk.to_vector();
  CHECK(std::vector<float>(y1v.begin(), y1v.begin() + k) == ykv);

  // Another seed: about half the decisions differ (2 p (1 - p)).
  dropout_forward(x, p, s + 1, y3);
  std::vector<float> y3v = y3.to_vector();
  int64_t differ = 0;
  for (int64_t i = 0; i < n; ++i) differ += (y1v[i] == 0.f) != (y3v[i] == 0.f);
  CHECK(std::fabs(double(differ) / n - 0.5) < 0.02);
}

TEST_CASE("dropout backward applies the forward's mask and matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t rows = rng.integer(1, 9), C = rng.integer(1, 9);
  const float p = float(rng.uniform(0.1, 0.7));
  const uint64_t s = uint64_t(rng.integer(0, 1 << 30));
  Tensor x = rng.randn({rows, C}), y = Tensor::empty({rows, C}), dx = Tensor::empty({rows, C});
  std::vector<float> w = rng.normals(rows * C);
  auto loss = [&] {
    dropout_forward(x, p, s, y);
    return dot(y, w);
  };
  dropout_backward(Tensor::from_vector(w, {rows, C}), p, s, dx);
  CHECK(rel_error(dx, numeric_grad(x, loss)) < 1e-3);

  // Large: dx = dy * scale exactly where the forward kept x, 0 elsewhere.
  const int64_t n = 50000;
  Tensor big = rng.randn({n}), ybig = Tensor::empty({n}), dy = rng.randn({n}), dxbig = Tensor::empty({n});
  dropout_forward(big, p, s, ybig);
  dropout_backward(dy, p, s, dxbig);
  std::vector<float> yv = ybig.to_vector(), dyv = dy.to_vector(), dxv = dxbig.to_vector();
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += dxv[i] != (yv[i] != 0.f ? dyv[i] * (1.f / (1.f - p)) : 0.f);
  CHECK(wrong == 0);
}

TEST_CASE("dropout with p = 0 is the identity and p outside 0 <= p < 1 throws") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Tensor x = rng.randn({3, 77}), y = Tensor::empty({3, 77});
  dropout_forward(x, 0.f, 42, y);
  CHECK(y.to_vector() == x.to_vector());
  CHECK_THROWS_WITH_AS(dropout_forward(x, 1.f, 42, y), doctest::Contains("p must be in [0, 1)"), lt::Error);
  CHECK_THROWS_WITH_AS(dropout_backward(x, -0.1f, 42, y), doctest::Contains("p must be in [0, 1)"), lt::Error);
}

TEST_CASE("dropout masks follow the batch row: any split of a batch draws the whole batch's masks") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = rng.integer(2, 9), L = rng.integer(1, 40), D = rng.integer(1, 70), cut = rng.integer(1, B - 1);
  const float p = float(rng.uniform(0.1, 0.8));
  const uint64_t s = uint64_t(rng.integer(0, 1 << 30));
  INFO("B " << B << " L " << L << " D " << D << " cut " << cut);
  // Batch-major [B, L, D]: rows cut.. as a tensor of their own, first row cut.
  Tensor x = rng.randn({B, L, D}), y = Tensor::empty({B, L, D});
  dropout_forward(x, p, s, y, {0, B, 1});
  const std::vector<float> xv = x.to_vector(), yv = y.to_vector();
  Tensor tail = x.rows(cut, B).clone(), ytail = Tensor::empty(tail.shape());
  dropout_forward(tail, p, s, ytail, {cut, B - cut, 1});
  CHECK(ytail.to_vector() == std::vector<float>(yv.begin() + cut * L * D, yv.end()));
  // Padding more positions onto each row leaves the masks of the first ones.
  Tensor longer = rng.randn({B, L + 3, D}), ylong = Tensor::empty({B, L + 3, D});
  dropout_forward(longer, p, s, ylong, {0, B, 1});
  const std::vector<float> lv = longer.to_vector(), ylv = ylong.to_vector();
  int64_t differ = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L * D; ++i)
      differ += (ylv[(b * (L + 3)) * D + i] == 0.f && lv[(b * (L + 3)) * D + i] != 0.f) !=
                (yv[b * L * D + i] == 0.f && xv[b * L * D + i] != 0.f);
  CHECK(differ == 0);

  // Time-major [L, B, D] (the Bi-LSTM's): element (l, b, d) gets the mask of
  // (b, l, d) in the batch-major layout.
  std::vector<float> tm(size_t(L * B * D));
  for (int64_t l = 0; l < L; ++l)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t d = 0; d < D; ++d) tm[size_t((l * B + b) * D + d)] = xv[size_t((b * L + l) * D + d)];
  Tensor xt = Tensor::from_vector(tm, {L, B, D}), yt = Tensor::empty({L, B, D});
  dropout_forward(xt, p, s, yt, {0, B, L});
  const std::vector<float> ytv = yt.to_vector();
  int64_t wrong = 0;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t d = 0; d < D; ++d) wrong += ytv[size_t((l * B + b) * D + d)] != yv[size_t((b * L + l) * D + d)];
  CHECK(wrong == 0);

  // Rows that do not divide the tensor are refused.
  CHECK_THROWS_WITH_AS(dropout_forward(x, p, s, y, {0, B * L * D + 1, 1}), doctest::Contains("do not divide"), lt::Error);
}
