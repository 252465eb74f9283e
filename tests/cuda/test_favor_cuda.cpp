// FAVOR+ on the GPU against the CPU: the same projection for a seed, the
// features and their gradient, and the packed step that runs the map's
// forward before the plain step (float32 and bfloat16 states).
#include <vector>

#include "attention/attention.h"
#include "attention/feature_map.h"
#include "backend/bf16.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

std::unique_ptr<FeatureMap> favor(int64_t E, int64_t F, uint64_t seed, Device device) {
  FeatureMapOptions o;
  o.head_dim = E;
  o.features = F;
  o.seed = seed;
  o.device = device;
  return make_feature_map("favor", o);
}

std::vector<float> bf16_values(const Tensor& t) {
  const Tensor c = t.to(Device::cpu);
  std::vector<float> out(c.numel());
  for (size_t i = 0; i < out.size(); ++i) out[i] = bf16_to_float(c.data_bf16()[i]);
  return out;
}

double bf16_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> w = bf16_values(want);
  return rel_error(bf16_values(got), std::vector<double>(w.begin(), w.end()));
}

}  // namespace

TEST_CASE("cuda favor: a seed draws the CPU's projection bit for bit, and so does a redraw") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t E = rng.integer(1, 64), F = 2 * rng.integer(1, 200);
  INFO("E " << E << " F " << F);
  auto cpu = favor(E, F, seed, Device::cpu), gpu = favor(E, F, seed, Device::cuda);
  CHECK(gpu->tensors().at("omega").device() == Device::cuda);
  CHECK(gpu->tensors().at("omega").to_vector() == cpu->tensors().at("omega").to_vector());
  cpu->redraw(seed + 1);
  gpu->redraw(seed + 1);
  CHECK(gpu->tensors().at("omega").to_vector() == cpu->tensors().at("omega").to_vector());
}

TEST_CASE("cuda favor forward and backward match the CPU's") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // Fewer projections than a warp's lanes, a partial last round, the default width, many.
  for (auto [E, F] : {std::pair<int64_t, int64_t>{8, 16}, {32, 0}, {33, 2 * 45}, {64, 1024},
                      {rng.integer(1, 100), 2 * rng.integer(1, 300)}}) {
    const int64_t rows = rng.integer(1, 3000);
    INFO("E " << E << " F " << F << " rows " << rows);
    const uint64_t draw = rng.gen();
    auto cpu = favor(E, F, draw, Device::cpu), gpu = favor(E, F, draw, Device::cuda);
    const int64_t width = cpu->feature_dim(E);
    Tensor x = rng.randn({rows, E}), dy = rng.randn({rows, width});
    Tensor y = Tensor::empty({rows, width}), dx = Tensor::empty({rows, E});
    Tensor gy = Tensor::empty({rows, width}, Device::cuda), gdx = Tensor::empty({rows, E}, Device::cuda);
    cpu->forward(x, y);
    cpu->backward(x, dy, dx);
    const Tensor gx = x.to(Device::cuda);
    gpu->forward(gx, gy);
    gpu->backward(gx, dy.to(Device::cuda), gdx);
    CHECK(rel_error(gy, y) < 1e-5);
    // dx = c (omega g - x~ sum g) sums terms that partly cancel.
    CHECK(rel_error(gdx, dx) < 5e-5);
  }
}

TEST_CASE("cuda packed step with favor (its forward, then the plain step) matches the CPU's") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (DType state_type : {DType::f32, DType::bf16}) {
    const int64_t N = rng.integer(1, 200), H = rng.integer(1, 8), E = rng.integer(1, 64);
    const uint64_t draw = rng.gen();
    auto cpu = favor(E, 0, draw, Device::cpu), gpu = favor(E, 0, draw, Device::cuda);
    const int64_t F = cpu->feature_dim(E);
    INFO("state " << dtype_name(state_type) << " N " << N << " H " << H << " E " << E << " F " << F);
    Tensor S = Tensor::zeros({N, H, F, E}, Device::cpu, state_type), Z = Tensor::zeros({N, H, F});
    Tensor gS = S.to(Device::cuda), gZ = Z.to(Device::cuda);
    Tensor out = Tensor::empty({N, H, E}), gout = Tensor::empty({N, H, E}, Device::cuda);
    for (int step = 0; step < 5; ++step) {
      INFO("step " << step);
      Tensor qkv = rng.randn({N, 3, H, E});
      linear_attention_step_packed(qkv, *cpu, S, Z, out);
      linear_attention_step_packed(qkv.to(Device::cuda), *gpu, gS, gZ, gout);
      if (state_type == DType::f32) {
        CHECK(rel_error(gout, out) < 1e-5);
        CHECK(rel_error(gS, S) < 1e-5);
      } else {  // a tie rounded the other way: one bf16 step (2^-8) at most
        CHECK(rel_error(gout, out) < 4e-3);
        CHECK(bf16_error(gS, S) < 4e-3);
      }
      CHECK(rel_error(gZ, Z) < 1e-5);
    }
  }
}

TEST_CASE("cuda favor refuses inputs on another device than its projection") {
  if (!cuda_or_skip()) return;
  auto cpu = favor(8, 16, 1, Device::cpu);
  Tensor gx = Tensor::zeros({2, 8}, Device::cuda), gy = Tensor::zeros({2, 16}, Device::cuda);
  CHECK_THROWS_WITH_AS(cpu->forward(gx, gy), doctest::Contains("feature map favor: tensors on different devices"),
                       lt::Error);
}
