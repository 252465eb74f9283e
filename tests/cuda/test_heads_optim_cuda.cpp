#include <algorithm>
#include <cmath>

#include "heads/heads.h"
#include "optim/optimizer.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
constexpr Device kGpu = Device::cuda;

// Mixture rows touching every case of the loss: bytes 0 and 255, components
// far in the tail with tiny scales, clamped log-scales, ordinary rows.
void mixture_rows(Rng& rng, int64_t R, int64_t K, std::vector<float>& params, std::vector<int32_t>& bytes) {
  params.resize(R * 3 * K);
  bytes.resize(R);
  for (int64_t r = 0; r < R; ++r) {
    float* p = params.data() + r * 3 * K;
    const int kind = int(r % 5);
    const int byte = kind == 0 ? 0 : kind == 1 ? 255 : int(rng.integer(40, 215));
    const double y = byte / 255.0 * 2 - 1;
    bytes[r] = byte;
    for (int64_t k = 0; k < K; ++k) {
      p[k] = float(rng.normal());
      if (kind == 2) {
        p[K + k] = float(y + rng.integer(10, 30) * 2 / 255.0);
        p[2 * K + k] = float(rng.uniform(-6.9, -6.0));
      } else if (kind == 3) {
        p[K + k] = float(y + rng.uniform(-2, 2) * 2 / 255.0);
        p[2 * K + k] = float(rng.uniform(-9, -7.05));
      } else {
        p[K + k] = float(rng.uniform(-1, 1));
        p[2 * K + k] = float(rng.uniform(-4.5, 0.5));
      }
    }
  }
}

int64_t mismatches(const Tensor& a, const Tensor& b) {
  auto av = a.to_vector_i32(), bv = b.to_vector_i32();
  int64_t n = 0;
  for (size_t i = 0; i < av.size(); ++i) n += av[i] != bv[i];
  return n;
}
}  // namespace

TEST_CASE("cuda mixture of logistics loss and gradient and samples match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // More rows than the kernels' grid holds threads, so the grid-stride loops turn.
  const int64_t K = rng.integer(1, 10), R = (int64_t(1) << 20) + rng.integer(1, 1000);
  std::vector<float> pv;
  std::vector<int32_t> bv;
  mixture_rows(rng, R, K, pv, bv);
  Tensor params = Tensor::from_vector(pv, {R, 3 * K}), bytes = Tensor::from_vector(bv, {R});
  Tensor gparams = params.to(kGpu), gbytes = bytes.to(kGpu);

  Tensor nll = Tensor::empty({R}), gnll = Tensor::empty({R}, kGpu);
  const double mean = mol_loss_forward(params, bytes, nll);
  const double gmean = mol_loss_forward(gparams, gbytes, gnll);
  CHECK(rel_error(gnll, nll) < 1e-5);
  CHECK(std::abs(gmean - mean) < 1e-9 * std::abs(mean));

  const float scale = float(rng.uniform(0.1, 2));
  Tensor grad = Tensor::empty({R, 3 * K}), ggrad = Tensor::empty({R, 3 * K}, kGpu);
  mol_loss_backward(params, bytes, scale, grad);
  mol_loss_backward(gparams, gbytes, scale, ggrad);
  CHECK(rel_error(ggrad, grad) < 1e-5);

  // Same seed, same bytes on both backends.
  Tensor out = Tensor::empty({R}, Device::cpu, DType::i32), gout = Tensor::empty({R}, kGpu, DType::i32);
  const uint64_t s = rng.gen();
  const int64_t step = rng.integer(0, 3071);
  mol_sample(params, s, step, out);
  mol_sample(gparams, s, step, gout);
  CHECK(mismatches(gout, out) == 0);

  bv[R / 2] = 300;
  Tensor bad = Tensor::from_vector(bv, {R}, kGpu);
  const std::string message = "target 300 at row " + std::to_string(R / 2) + " is not a byte";
  CHECK_THROWS_WITH_AS(mol_loss_forward(gparams, bad, gnll), doctest::Contains(message.c_str()), lt::Error);
  CHECK_THROWS_WITH_AS(mol_loss_backward(gparams, bad, 1.f, ggrad), doctest::Contains("is not a byte"), lt::Error);
}

TEST_CASE("cuda categorical loss and gradient and samples match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t V : {int64_t(256), rng.integer(1, 31), rng.integer(33, 1500)}) {
    INFO("V " << V);
    // About 20M logits; for V = 256 more rows than the grid has warps.
    const int64_t R = rng.integer(std::min<int64_t>(1000000, 10000000 / V), std::min<int64_t>(2000000, 20000000 / V));
    std::vector<int32_t> tv(R);
    for (auto& t : tv) t = int32_t(rng.integer(0, V - 1));
    Tensor logits = rng.randn({R, V}, 3), targets = Tensor::from_vector(tv, {R});
    Tensor glogits = logits.to(kGpu), gtargets = targets.to(kGpu);

    Tensor nll = Tensor::empty({R}), gnll = Tensor::empty({R}, kGpu);
    const double mean = categorical_loss_forward(logits, targets, nll);
    const double gmean = categorical_loss_forward(glogits, gtargets, gnll);
    CHECK(rel_error(gnll, nll) < 1e-5);
    CHECK(std::abs(gmean - mean) < 1e-6 * std::abs(mean) + 1e-9);

    const float scale = float(rng.uniform(0.1, 2));
    Tensor grad = Tensor::empty({R, V}), ggrad = Tensor::empty({R, V}, kGpu);
    categorical_loss_backward(logits, targets, scale, grad);
    categorical_loss_backward(glogits, gtargets, scale, ggrad);
    CHECK(rel_error(ggrad, grad) < 1e-5);

    Tensor out = Tensor::empty({R}, Device::cpu, DType::i32), gout = Tensor::empty({R}, kGpu, DType::i32);
    const uint64_t s = rng.gen();
    categorical_sample(logits, s, 11, out);
    categorical_sample(glogits, s, 11, gout);
    CHECK(mismatches(gout, out) == 0);

    tv[R - 1] = int32_t(V);
    Tensor bad = Tensor::from_vector(tv, {R}, kGpu);
    const std::string message = "at row " + std::to_string(R - 1) + " is outside the";
    CHECK_THROWS_WITH_AS(categorical_loss_forward(glogits, bad, gnll), doctest::Contains(message.c_str()), lt::Error);
  }
}

TEST_CASE("cuda radam and adam follow the CPU over 20 steps") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (const char* name : {"radam", "adam"}) {
    INFO(name);
    // Past the update kernel's grid, so its grid-stride loop turns.
    const int64_t n = rng.integer(1, 3000000);
    Tensor params = rng.randn({n}), gparams = params.to(kGpu);
    auto cpu = make_optimizer(name, n, Device::cpu), gpu = make_optimizer(name, n, kGpu);
    for (int t = 0; t < 20; ++t) {
      Tensor grad = rng.randn({n}, rng.uniform(0.01, 2));
      const float lr = float(rng.uniform(1e-3, 5e-2));
      cpu->step(params, grad, lr);
      Tensor ggrad = grad.to(kGpu);
      gpu->step(gparams, ggrad, lr);
    }
    CHECK(rel_error(gparams, params) < 1e-6);
    CHECK(rel_error(gpu->state().at("exp_avg"), cpu->state().at("exp_avg")) < 1e-6);
    CHECK(rel_error(gpu->state().at("exp_avg_sq"), cpu->state().at("exp_avg_sq")) < 1e-6);
  }
}

TEST_CASE("cuda gradient clipping matches the CPU per segment and global") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // More segments than a grid's y extent, some empty, and one long segment.
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < 70000; ++i) sizes.push_back(rng.integer(0, 40));
  sizes.insert(sizes.begin() + rng.integer(0, 70000), rng.integer(1, 3000000));
  int64_t n = 0;
  for (int64_t s : sizes) n += s;
  std::vector<float> gv(n);
  for (auto& g : gv) g = float(rng.normal() * 0.2);
  Tensor grad = Tensor::from_vector(gv, {n}), ggrad = grad.to(kGpu);
  const float max_norm = float(rng.uniform(0.5, 2));
  std::vector<double> norms = clip_grad_norm_segments(grad, sizes, max_norm);
  std::vector<double> gnorms = clip_grad_norm_segments(ggrad, sizes, max_norm);
  REQUIRE(gnorms.size() == norms.size());
  int64_t off = 0;
  for (size_t i = 0; i < norms.size(); ++i) off += std::abs(gnorms[i] - norms[i]) > 1e-9 * norms[i];
  CHECK(off == 0);
  CHECK(rel_error(ggrad, grad) < 1e-6);

  Tensor whole = rng.randn({n}), gwhole = whole.to(kGpu);
  const double norm = clip_grad_norm(whole, 1.f), gnorm = clip_grad_norm(gwhole, 1.f);
  CHECK(std::abs(gnorm - norm) < 1e-9 * norm);
  CHECK(rel_error(gwhole, whole) < 1e-6);
}
