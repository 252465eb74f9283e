#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("add and accumulate match a float64 reference and add works in place") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t max_n : {99, 100000}) {  // the second size takes the OpenMP path
    const int64_t rows = rng.integer(1, max_n / 7 + 1), C = rng.integer(1, 7);
    Tensor a = rng.randn({rows, C}), b = rng.randn({rows, C}), y = Tensor::empty({rows, C});
    auto av = to_double(a), bv = to_double(b);
    std::vector<double> sum(av.size());
    for (size_t i = 0; i < av.size(); ++i) sum[i] = av[i] + bv[i];

    add(a, b, y);
    CHECK(rel_error(y, sum) < 1e-6);
    Tensor a2 = a.clone(), b2 = b.clone();
    add(a2, b, a2);  // y aliases a
    CHECK(rel_error(a2, sum) < 1e-6);
    add(a, b2, b2);  // y aliases b
    CHECK(rel_error(b2, sum) < 1e-6);

    accumulate(a, b);
    CHECK(rel_error(a, sum) < 1e-6);
  }
}

TEST_CASE("add backward (accumulate of dy into both inputs) matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = rng.integer(1, 12);
  Tensor a = rng.randn({n}), b = rng.randn({n}), y = Tensor::empty({n});
  std::vector<float> w = rng.normals(n);
  auto loss = [&] {
    add(a, b, y);
    return dot(y, w);
  };
  Tensor dy = Tensor::from_vector(w, {n}), da = Tensor::zeros({n}), db = rng.randn({n});
  std::vector<double> db_ref = to_double(db), num_b = numeric_grad(b, loss);
  accumulate(da, dy);
  accumulate(db, dy);
  for (int64_t i = 0; i < n; ++i) db_ref[i] += num_b[i];
  CHECK(rel_error(da, numeric_grad(a, loss)) < 1e-3);
  CHECK(rel_error(db, db_ref) < 1e-3);
}

TEST_CASE("add and accumulate reject mismatched shapes") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2}), y = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH_AS(add(a, b, y), doctest::Contains("a [2, 3], b [3, 2], y [2, 3]"), lt::Error);
  CHECK_THROWS_WITH_AS(accumulate(a, b), doctest::Contains("dst [2, 3] and src [3, 2] differ"), lt::Error);
}

TEST_CASE("copy_columns copies a block of columns of every row") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t rows = rng.integer(1, 40), C = rng.integer(1, 50), first = rng.integer(0, C - 1);
  const int64_t c = rng.integer(1, C - first);
  INFO("rows " << rows << " C " << C << " first " << first << " c " << c);
  Tensor src = rng.randn({rows, C}), dst = Tensor::empty({rows, c});
  copy_columns(src, first, dst);
  const std::vector<float> sv = src.to_vector();
  std::vector<float> want;
  for (int64_t r = 0; r < rows; ++r) want.insert(want.end(), sv.begin() + r * C + first, sv.begin() + r * C + first + c);
  CHECK(dst.to_vector() == want);
  Tensor wide = Tensor::empty({rows, C - first + 1});
  CHECK_THROWS_WITH_AS(copy_columns(src, first, wide), doctest::Contains("do not fit"), lt::Error);
}

TEST_CASE("swap_leading_axes moves element [a, b, c] to [b, a, c] and refuses a wrong output shape") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n0 = rng.integer(1, 30), n1 = rng.integer(1, 30), C = rng.integer(1, 9);
  INFO(n0 << " x " << n1 << " x " << C);
  Tensor src = rng.randn({n0, n1, C}), dst = Tensor::empty({n1, n0, C});
  swap_leading_axes(src, dst);
  const std::vector<float> s = src.to_vector(), d = dst.to_vector();
  for (int64_t a = 0; a < n0; ++a)
    for (int64_t b = 0; b < n1; ++b)
      for (int64_t c = 0; c < C; ++c) REQUIRE(d[(b * n0 + a) * C + c] == s[(a * n1 + b) * C + c]);
  Tensor back = Tensor::empty({n0, n1, C});
  swap_leading_axes(dst, back);
  CHECK(back.to_vector() == s);
  Tensor wrong = Tensor::empty({n1 + 1, n0, C});
  CHECK_THROWS_WITH_AS(swap_leading_axes(src, wrong), doctest::Contains("swap_leading_axes output"), lt::Error);
}
