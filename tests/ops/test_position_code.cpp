#include <cmath>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
std::vector<double> position_code_ref(int64_t offset, int64_t L, int64_t D) {
  std::vector<double> pe(L * D);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t j = 0; j < D; ++j) {
      const int64_t i2 = j - j % 2;  // 2i for both members of a pair
      const double angle = double(offset + l) / std::pow(10000.0, double(i2) / D);
      pe[l * D + j] = j % 2 ? std::cos(angle) : std::sin(angle);
    }
  return pe;
}
}  // namespace

TEST_CASE("position code matches the formula in float64 at small and large offsets") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t offset : {int64_t(0), rng.integer(1, 100), rng.integer(10000, 100000)}) {
    const int64_t L = rng.integer(1, 300), D = 2 * rng.integer(1, 40);
    INFO("offset " << offset << " L " << L << " D " << D);
    Tensor pe = Tensor::empty({L, D});
    position_code(offset, pe);
    std::vector<double> ref = position_code_ref(offset, L, D);
    CHECK(rel_error(pe, ref) < 1e-5);
    std::vector<float> v = pe.to_vector();
    double worst = 0;
    for (size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::fabs(v[i] - ref[i]));
    CHECK(worst < 1e-6);  // every entry, not only on average
  }
}

TEST_CASE("position code at position 0 is sin 0 = 0 and cos 0 = 1 and offsets shift rows") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t L = rng.integer(2, 50), D = 2 * rng.integer(1, 20), offset = rng.integer(1, L - 1);
  Tensor pe = Tensor::empty({L, D}), shifted = Tensor::empty({L - offset, D});
  position_code(0, pe);
  std::vector<float> v = pe.to_vector();
  for (int64_t j = 0; j < D; ++j) CHECK(v[j] == (j % 2 ? 1.f : 0.f));
  CHECK(v[D] == doctest::Approx(std::sin(1.0)));  // pe[1, 0] = sin(1)
  CHECK(v[D + 1] == doctest::Approx(std::cos(1.0)));
  position_code(offset, shifted);
  CHECK(shifted.to_vector() == std::vector<float>(v.begin() + offset * D, v.end()));
}

TEST_CASE("position code rejects an odd width") {
  Tensor pe = Tensor::empty({4, 7});
  CHECK_THROWS_WITH_AS(position_code(0, pe), doctest::Contains("D must be even"), lt::Error);
}

TEST_CASE("concat_position forward appends pe to every sequence and backward keeps the first C channels") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 4), L = rng.integer(1, 200), C = rng.integer(1, 40), D = 2 * rng.integer(1, 10);
  Tensor x = rng.randn({N, L, C}), pe = Tensor::empty({L, D}), y = Tensor::empty({N, L, C + D});
  position_code(0, pe);
  concat_position_forward(x, pe, y);
  auto xv = to_double(x), pv = to_double(pe);
  std::vector<double> ref(N * L * (C + D));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t j = 0; j < C + D; ++j)
        ref[(n * L + l) * (C + D) + j] = j < C ? xv[(n * L + l) * C + j] : pv[l * D + j - C];
  CHECK(rel_error(y, ref) == 0);

  Tensor dy = rng.randn({N, L, C + D}), dx = Tensor::empty({N, L, C});
  concat_position_backward(dy, dx);
  auto dyv = to_double(dy);
  std::vector<double> dx_ref(N * L * C);
  for (int64_t r = 0; r < N * L; ++r)
    for (int64_t c = 0; c < C; ++c) dx_ref[r * C + c] = dyv[r * (C + D) + c];
  CHECK(rel_error(dx, dx_ref) == 0);
}

TEST_CASE("concat_position backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 3), L = rng.integer(1, 4), C = rng.integer(1, 4), D = 2;
  Tensor x = rng.randn({N, L, C}), pe = Tensor::empty({L, D}), y = Tensor::empty({N, L, C + D});
  position_code(3, pe);
  std::vector<float> w = rng.normals(N * L * (C + D));
  auto loss = [&] {
    concat_position_forward(x, pe, y);
    return dot(y, w);
  };
  Tensor dx = Tensor::empty({N, L, C});
  concat_position_backward(Tensor::from_vector(w, {N, L, C + D}), dx);
  CHECK(rel_error(dx, numeric_grad(x, loss)) < 1e-3);
}

TEST_CASE("concat_position rejects mismatched shapes") {
  Tensor x = Tensor::zeros({2, 5, 3}), pe = Tensor::zeros({4, 2}), y = Tensor::zeros({2, 5, 5});
  CHECK_THROWS_WITH_AS(concat_position_forward(x, pe, y), doctest::Contains("x [2, 5, 3] and pe [4, 2]"), lt::Error);
  Tensor pe5 = Tensor::zeros({5, 2}), y4 = Tensor::zeros({2, 5, 4});
  CHECK_THROWS_WITH_AS(concat_position_forward(x, pe5, y4), doctest::Contains("expected shape [2, 5, 5], got [2, 5, 4]"),
                       lt::Error);
}
