#include <algorithm>
#include <cmath>

#include "heads/heads.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// log softmax(x)_j in float64.
std::vector<double> reference_log_softmax(const std::vector<float>& x, int64_t row, int64_t V) {
  const float* p = x.data() + row * V;
  double m = *std::max_element(p, p + V), s = 0;
  for (int64_t j = 0; j < V; ++j) s += std::exp(p[j] - m);
  std::vector<double> out(V);
  for (int64_t j = 0; j < V; ++j) out[j] = p[j] - m - std::log(s);
  return out;
}
}  // namespace

TEST_CASE("categorical loss and gradient match float64 references") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 3), L = rng.integer(1, 50);
  const int64_t V = rng.uniform() < 0 ? 256 : rng.integer(1, 40), R = N * L;
  std::vector<float> xv = rng.normals(R * V, 3);
  std::vector<int32_t> tv(R);
  for (auto& t : tv) t = int32_t(rng.integer(0, V - 1));
  Tensor logits = Tensor::from_vector(xv, {N, L, V}), targets = Tensor::from_vector(tv, {N, L});
  Tensor nll = Tensor::empty({N, L}), dlogits = rng.randn({N, L, V});  // dlogits is overwritten
  const double mean = categorical_loss_forward(logits, targets, nll);
  const float scale = float(rng.uniform(0.1, 2));
  categorical_loss_backward(logits, targets, scale, dlogits);

  std::vector<double> ref_nll(R), ref_grad(R * V);
  double ref_mean = 0;
  for (int64_t r = 0; r < R; ++r) {
    std::vector<double> ls = reference_log_softmax(xv, r, V);
    ref_nll[r] = -ls[tv[r]];
    ref_mean += ref_nll[r] / R;
    for (int64_t j = 0; j < V; ++j) ref_grad[r * V + j] = scale * (std::exp(ls[j]) - (j == tv[r]));
  }
  CHECK(rel_error(nll, ref_nll) < 1e-5);
  CHECK(std::abs(mean - ref_mean) < 1e-6 * std::abs(ref_mean) + 1e-9);
  CHECK(rel_error(dlogits, ref_grad) < 1e-5);
}

TEST_CASE("categorical samples follow softmax(logits)") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t V = 256, B = 4096, steps = 25;
  std::vector<float> row = rng.normals(V, 3);
  std::vector<float> many(B * V);
  for (int64_t b = 0; b < B; ++b) std::copy(row.begin(), row.end(), many.begin() + b * V);
  Tensor logits = Tensor::from_vector(many, {B, V}), out = Tensor::empty({B}, Device::cpu, DType::i32);
  const uint64_t s = rng.gen();
  std::vector<double> count(V, 0.0);
  int64_t outside = 0;
  for (int64_t t = 0; t < steps; ++t) {
    categorical_sample(logits, s, t, out);
    for (int32_t v : out.to_vector_i32()) {
      if (v < 0 || v >= V) ++outside;
      else count[v] += 1;
    }
  }
  REQUIRE(outside == 0);
  // Pearson's chi-square over the classes expected at least 5 times (the rest
  // pooled), against a bound about six standard deviations above its mean.
  const double draws = double(B * steps);
  std::vector<double> ls = reference_log_softmax(row, 0, V);
  double chi2 = 0, pooled_expected = 0, pooled_observed = 0;
  int bins = 0;
  for (int64_t j = 0; j < V; ++j) {
    const double expected = draws * std::exp(ls[j]);
    if (expected < 5) {
      pooled_expected += expected;
      pooled_observed += count[j];
      continue;
    }
    chi2 += (count[j] - expected) * (count[j] - expected) / expected;
    ++bins;
  }
  if (pooled_expected > 0) {
    chi2 += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
    ++bins;
  }
  const double dof = bins - 1;
  INFO("chi2 " << chi2 << " over " << bins << " bins");
  CHECK(chi2 < dof + 6 * std::sqrt(2 * dof) + 10);
}

TEST_CASE("categorical sampling is a function of seed and step and row") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 64, V = 256;
  Tensor logits = rng.randn({B, V}, 0.5);
  Tensor a = Tensor::empty({B}, Device::cpu, DType::i32), b = a.clone(), c = a.clone();
  const uint64_t s = rng.gen();
  categorical_sample(logits, s, 3, a);
  categorical_sample(logits, s, 3, b);
  categorical_sample(logits, s, 4, c);
  auto av = a.to_vector_i32(), bv = b.to_vector_i32(), cv = c.to_vector_i32();
  CHECK(av == bv);
  int differ = 0;
  for (int64_t i = 0; i < B; ++i) differ += av[i] != cv[i];
  CHECK(differ > B / 2);
}

TEST_CASE("categorical loss rejects bad shapes and targets with a message naming them") {
  Tensor logits = Tensor::zeros({2, 3, 10}), targets = Tensor::zeros({5}, Device::cpu, DType::i32);
  Tensor nll = Tensor::zeros({6});
  CHECK_THROWS_WITH_AS(categorical_loss_forward(logits, targets, nll),
                       doctest::Contains("targets [5] needs one entry per row of logits [2, 3, 10]"),
                       lt::Error);
  Tensor bad = Tensor::from_vector(std::vector<int32_t>{0, 1, 2, -1, 4, 5}, {2, 3});
  CHECK_THROWS_WITH_AS(categorical_loss_forward(logits, bad, nll),
                       doctest::Contains("target -1 at row 3 is outside the 10 classes"), lt::Error);
  Tensor dlogits = Tensor::zeros({6, 10});
  CHECK_THROWS_WITH_AS(categorical_loss_backward(logits, bad.reshape({6}), 1.f, dlogits),
                       doctest::Contains("expected shape [2, 3, 10], got [6, 10]"), lt::Error);
}
