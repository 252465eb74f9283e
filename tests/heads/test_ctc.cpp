// CTC loss against brute-force enumeration of every alignment, its gradient
// against central differences, and the edge cases: repeated labels, an input
// just long enough, one too short, padding and batches of mixed lengths.
#include <cmath>
#include <limits>

#include "heads/ctc.h"
#include "heads/ctc_reference.h"
#include "io/temp_dir.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

CtcTargets targets_of(const std::vector<std::vector<int32_t>>& rows) {
  CtcTargets t;
  t.offsets = {0};
  for (const auto& r : rows) {
    t.labels.insert(t.labels.end(), r.begin(), r.end());
    t.offsets.push_back(int64_t(t.labels.size()));
  }
  return t;
}

double nll_of(const Tensor& logits, const std::vector<int32_t>& frames, const CtcTargets& t, std::vector<float>* rows = nullptr) {
  Tensor nll = Tensor::empty({logits.dim(0)});
  const double sum = ctc_loss_forward(logits, frames, t, nll);
  if (rows) *rows = nll.to_vector();
  return sum;
}

std::vector<int32_t> random_labels(Rng& rng, int64_t n, int64_t C) {
  std::vector<int32_t> l;
  for (int64_t i = 0; i < n; ++i) l.push_back(int32_t(rng.integer(1, C - 1)));
  return l;
}

}  // namespace

TEST_CASE("ctc loss equals -log of the summed probability of every alignment (brute force)") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t T = rng.integer(1, 6), C = rng.integer(2, 4);
    const Tensor logits = rng.randn({1, T, C}, 2);
    const auto sequences = all_label_sequences(logits.data(), T, C);
    // Labels every alignment could emit, and some (too long) none can.
    std::vector<int32_t> labels = random_labels(rng, rng.integer(0, T), C);
    auto it = sequences.find(labels);
    const double want = it == sequences.end() ? std::numeric_limits<double>::infinity() : -std::log(it->second);
    INFO("T " << T << " C " << C << " labels " << labels.size());
    const double got = nll_of(logits, {int32_t(T)}, targets_of({labels}));
    if (std::isinf(want))
      CHECK(std::isinf(got));
    else
      CHECK(got == doctest::Approx(want).epsilon(1e-5));
  }
}

TEST_CASE("ctc gradient matches central differences of the loss") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 2, T = 7, C = 5;
  Tensor logits = rng.randn({B, T, C});
  const std::vector<int32_t> frames = {7, 5};
  const CtcTargets t = targets_of({random_labels(rng, 3, C), random_labels(rng, 2, C)});
  const std::vector<float> scale = {0.7f, 1.3f};
  Tensor grad = Tensor::empty({B, T, C});
  ctc_loss_backward(logits, frames, t, scale, grad);
  const std::vector<double> numeric = numeric_grad(
      logits,
      [&] {
        std::vector<float> rows;
        nll_of(logits, frames, t, &rows);
        return scale[0] * double(rows[0]) + scale[1] * double(rows[1]);
      },
      1e-2);
  CHECK(rel_error(grad, numeric) < 2e-3);
  // Padded frames of row 1 (5, 6) have no gradient.
  const std::vector<float> g = grad.to_vector();
  for (int64_t t2 = 5; t2 < T; ++t2)
    for (int64_t c = 0; c < C; ++c) CHECK(g[size_t((T + t2) * C + c)] == 0.f);
}

TEST_CASE("ctc: repeated labels need a blank between them, just long enough is finite, one frame short is not") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t C = 4;
  const std::vector<int32_t> labels = {2, 2, 3, 3, 3};  // 5 labels, 3 repeats: 8 frames at least
  CHECK(ctc_min_frames(labels.data(), 5) == 8);
  const Tensor exact = rng.randn({1, 8, C});
  const double nll = nll_of(exact, {8}, targets_of({labels}));
  // At 8 frames the only alignment is 2 0 2 3 0 3 0 3.
  const std::vector<double> p = softmax_rows(exact.data(), 8, C);
  const int32_t only[8] = {2, 0, 2, 3, 0, 3, 0, 3};
  double want = 0;
  for (int t = 0; t < 8; ++t) want -= std::log(p[size_t(t * C + only[t])]);
  CHECK(nll == doctest::Approx(want).epsilon(1e-6));

  const Tensor shorter = rng.randn({1, 7, C});
  CHECK(std::isinf(nll_of(shorter, {7}, targets_of({labels}))));
  Tensor grad = Tensor::empty({1, 7, C});
  ctc_loss_backward(shorter, {7}, targets_of({labels}), {1.f}, grad);
  for (float g : grad.to_vector()) CHECK(g == 0.f);
  SUBCASE("no frames and no labels: probability 1") {
    CHECK(nll_of(shorter, {0}, targets_of({{}})) == 0.0);
  }
}

TEST_CASE("ctc: a batch of mixed lengths equals each row alone, and padding is ignored") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 4, T = 12, C = 6;
  const Tensor logits = rng.randn({B, T, C});
  std::vector<int32_t> frames;
  std::vector<std::vector<int32_t>> rows;
  for (int64_t b = 0; b < B; ++b) {
    frames.push_back(int32_t(rng.integer(4, T)));
    rows.push_back(random_labels(rng, rng.integer(0, 3), C));
  }
  std::vector<float> batch_nll;
  const double sum = nll_of(logits, frames, targets_of(rows), &batch_nll);
  Tensor grad = Tensor::empty({B, T, C});
  ctc_loss_backward(logits, frames, targets_of(rows), std::vector<float>(B, 1.f), grad);
  const std::vector<float> g = grad.to_vector(), x = logits.to_vector();
  double total = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = frames[size_t(b)];
    std::vector<float> row(x.begin() + b * T * C, x.begin() + (b * T + n) * C);
    // The padding gets other values: it must not matter.
    Tensor alone = Tensor::from_vector(row, {1, n, C});
    std::vector<float> one;
    total += nll_of(alone, {int32_t(n)}, targets_of({rows[size_t(b)]}), &one);
    // A row too short for its labels scores +inf alone and in the batch (Approx(inf) never matches inf).
    if (std::isinf(one[0]))
      CHECK(batch_nll[size_t(b)] == one[0]);
    else
      CHECK(one[0] == doctest::Approx(batch_nll[size_t(b)]).epsilon(1e-6));
    Tensor galone = Tensor::empty({1, n, C});
    ctc_loss_backward(alone, {int32_t(n)}, targets_of({rows[size_t(b)]}), {1.f}, galone);
    const std::vector<float> ga = galone.to_vector();
    for (int64_t i = 0; i < n * C; ++i) CHECK(ga[size_t(i)] == doctest::Approx(g[size_t(b * T * C + i)]).epsilon(1e-5));
    for (int64_t i = n * C; i < T * C; ++i) CHECK(g[size_t(b * T * C + i)] == 0.f);
  }
  if (std::isinf(total))
    CHECK(sum == total);
  else
    CHECK(sum == doctest::Approx(total).epsilon(1e-6));
}

TEST_CASE("ctc loss refuses labels outside the classes and frames past the input, naming the row") {
  Rng rng(1);
  const Tensor logits = rng.randn({2, 4, 3});
  Tensor nll = Tensor::empty({2});
  CHECK(error_of([&] { ctc_loss_forward(logits, {4, 4}, targets_of({{1}, {3}}), nll); }).find("row 1 has label 3") !=
        std::string::npos);
  CHECK(error_of([&] { ctc_loss_forward(logits, {4, 0}, targets_of({{1}, {0}}), nll); }).find("(0 is the blank)") !=
        std::string::npos);
  CHECK(error_of([&] { ctc_loss_forward(logits, {5, 4}, targets_of({{1}, {1}}), nll); }).find("row 0 has 5 frames") !=
        std::string::npos);
}
