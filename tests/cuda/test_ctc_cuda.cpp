// CTC loss on the GPU against the CPU: the same rows, lengths and labels
// (repeats, padding, a row too short, an empty one), loss and gradient.
#include <cmath>

#include "heads/ctc.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("cuda CTC loss and gradient match the CPU on a padded batch with every edge case") {
  if (!cuda_or_skip()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 6, T = 50, C = 40;
  const Tensor logits = rng.randn({B, T, C}, 2);
  std::vector<int32_t> frames = {50, 37, 12, 3, 0, 44};
  CtcTargets targets;
  targets.offsets = {0};
  const std::vector<std::vector<int32_t>> rows = {
      {}, {5, 5, 5, 9}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} /* exactly 12 */, {7, 7, 7} /* too short */, {},
      {}};
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> l = rows[size_t(b)];
    if (b == 0 || b == 5)
      for (int64_t i = rng.integer(5, 20); i > 0; --i) l.push_back(int32_t(rng.integer(1, C - 1)));
    targets.labels.insert(targets.labels.end(), l.begin(), l.end());
    targets.offsets.push_back(int64_t(targets.labels.size()));
  }
  std::vector<float> scale;
  for (int64_t b = 0; b < B; ++b) scale.push_back(float(rng.uniform(0.5, 2)));

  Tensor nll_cpu = Tensor::empty({B}), nll_gpu = Tensor::empty({B}, Device::cuda);
  const double sum_cpu = ctc_loss_forward(logits, frames, targets, nll_cpu);
  const Tensor logits_gpu = logits.to(Device::cuda);
  const double sum_gpu = ctc_loss_forward(logits_gpu, frames, targets, nll_gpu);
  const std::vector<float> a = nll_cpu.to_vector(), b = nll_gpu.to_vector();
  for (int64_t r = 0; r < B; ++r) {
    if (std::isinf(a[size_t(r)])) {
      CHECK(std::isinf(b[size_t(r)]));
      continue;
    }
    CHECK(b[size_t(r)] == doctest::Approx(a[size_t(r)]).epsilon(1e-5));
  }
  CHECK(std::isinf(sum_cpu) == std::isinf(sum_gpu));

  Tensor g_cpu = Tensor::empty({B, T, C});
  Tensor g_gpu = Tensor::from_vector(std::vector<float>(size_t(B * T * C), 123.f), {B, T, C}, Device::cuda);  // poisoned
  ctc_loss_backward(logits, frames, targets, scale, g_cpu);
  ctc_loss_backward(logits_gpu, frames, targets, scale, g_gpu);
  CHECK(rel_error(g_gpu, g_cpu) < 1e-5);
}
