#include <cmath>

#include "optim/optimizer.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// clip_grad_norm_ in float64 on one segment; returns the norm before clipping.
double reference_clip(std::vector<double>& g, size_t begin, size_t end, double max_norm) {
  double s = 0;
  for (size_t i = begin; i < end; ++i) s += g[i] * g[i];
  const double norm = std::sqrt(s), coef = max_norm / (norm + 1e-6);
  if (coef < 1)
    for (size_t i = begin; i < end; ++i) g[i] *= coef;
  return norm;
}
}  // namespace

TEST_CASE("clip_grad_norm matches a float64 norm and clips only above max_norm") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = rng.integer(1, 100000);
  for (double scale : {1e-3, 1.0}) {  // below and above the threshold
    Tensor grad = rng.randn({n}, scale / std::sqrt(double(n)) * 3);
    std::vector<double> ref = to_double(grad);
    const float max_norm = float(rng.uniform(0.5, 2));
    const double want = reference_clip(ref, 0, ref.size(), max_norm);
    const double norm = clip_grad_norm(grad, max_norm);
    CHECK(std::abs(norm - want) < 1e-9 * want);
    CHECK(rel_error(grad, ref) < 1e-6);
  }
}

TEST_CASE("clip_grad_norm_segments clips each parameter's gradient on its own") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  std::vector<int64_t> sizes;
  for (int64_t i = 0, k = rng.integer(1, 12); i < k; ++i) sizes.push_back(rng.integer(0, 3000));
  int64_t n = 0;
  for (int64_t s : sizes) n += s;
  sizes.push_back(1);  // never empty overall
  n += 1;
  std::vector<float> gv(n);
  size_t at = 0;
  for (int64_t s : sizes)  // half the segments well under max_norm, half over
    for (int64_t i = 0; i < s; ++i) gv[at++] = float(rng.normal() * (rng.uniform() < 0 ? 1e-4 : 0.1));
  Tensor grad = Tensor::from_vector(gv, {n});
  std::vector<double> ref(gv.begin(), gv.end()), want;
  size_t begin = 0;
  for (int64_t s : sizes) {
    want.push_back(reference_clip(ref, begin, begin + s, 1.0));
    begin += s;
  }
  std::vector<double> norms = clip_grad_norm_segments(grad, sizes, 1.f);
  REQUIRE(norms.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(std::abs(norms[i] - want[i]) <= 1e-9 * want[i]);
  CHECK(rel_error(grad, ref) < 1e-6);

  Tensor g = Tensor::zeros({10});
  CHECK_THROWS_WITH_AS(clip_grad_norm_segments(g, {4, 5}, 1.f),
                       doctest::Contains("segment sizes add up to 9 but the gradient [10] has 10 values"),
                       lt::Error);
}
