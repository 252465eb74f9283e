#include <cmath>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "lt/attention.h"
#include "lt/feature_map.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// phi(x) = elu(x) + 1 of a standard normal: positive features, sane denominators.
Tensor positive_features(Rng& rng, const Shape& shape) {
  std::vector<float> x = rng.normals(shape_numel(shape));
  for (auto& e : x) e = e > 0 ? e + 1.f : std::exp(e);
  return Tensor::from_vector(x, shape);
}

// A bfloat16 tensor's values, from either device.
std::vector<float> bf16_values(const Tensor& t) {
  const Tensor c = t.to(Device::cpu);
  std::vector<float> out(c.numel());
  for (size_t i = 0; i < out.size(); ++i) out[i] = bf16_to_float(c.data_bf16()[i]);
  return out;
}

// The normalised error between two bf16 states.
double bf16_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> w = bf16_values(want);
  return rel_error(bf16_values(got), std::vector<double>(w.begin(), w.end()));
}

// Random values already rounded to bf16, stored as bf16 bits.
Tensor random_bf16(Rng& rng, const Shape& shape) {
  Tensor t = Tensor::empty(shape, Device::cpu, DType::bf16);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_bf16()[i] = float_to_bf16(float(rng.normal()));
  return t;
}

void compare_with_cpu(Rng& rng, int64_t N, int64_t L, int64_t H, int64_t F, int64_t M) {
  INFO("N " << N << " L " << L << " H " << H << " F " << F << " M " << M);
  Tensor q = positive_features(rng, {N, L, H, F}), k = positive_features(rng, {N, L, H, F});
  Tensor v = rng.randn({N, L, H, M}), dout = rng.randn({N, L, H, M});
  Tensor out = Tensor::empty(v.shape()), dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()),
         dv = Tensor::empty(v.shape());
  causal_linear_attention_forward(q, k, v, Tensor(), out);
  causal_linear_attention_backward(q, k, v, Tensor(), dout, dq, dk, dv);

  Tensor gq = q.to(Device::cuda), gk = k.to(Device::cuda), gv = v.to(Device::cuda), gdout = dout.to(Device::cuda);
  Tensor gout = Tensor::empty(v.shape(), Device::cuda), gdq = Tensor::empty(q.shape(), Device::cuda),
         gdk = Tensor::empty(k.shape(), Device::cuda), gdv = Tensor::empty(v.shape(), Device::cuda);
  causal_linear_attention_forward(gq, gk, gv, Tensor(), gout);
  causal_linear_attention_backward(gq, gk, gv, Tensor(), gdout, gdq, gdk, gdv);
  CHECK(rel_error(gout, out) < 1e-5);
  // The GPU accumulates the state position by position, the CPU chunk by
  // chunk: both are fp32, and dfq sums terms that largely cancel.
  CHECK(rel_error(gdq, dq) < 5e-5);
  CHECK(rel_error(gdk, dk) < 5e-5);
  CHECK(rel_error(gdv, dv) < 5e-5);
}

}  // namespace

TEST_CASE("cuda causal linear attention forward and backward match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // L >= 2 and F >= 2 throughout: with one position or one feature the true
  // dfq, dfk are zero up to eps and only rounding noise would be compared.
  compare_with_cpu(rng, 1, 2, 1, 7, 5);
  compare_with_cpu(rng, rng.integer(1, 3), rng.integer(2, 300), rng.integer(1, 4), 33, 47);
  compare_with_cpu(rng, 2, rng.integer(500, 2100), 3, 32, 32);
  compare_with_cpu(rng, 1, rng.integer(100, 300), 2, 64, 64);
  compare_with_cpu(rng, 1, rng.integer(50, 200), 2, 256, 256);
  compare_with_cpu(rng, rng.integer(1, 3), rng.integer(2, 200), rng.integer(1, 3), rng.integer(2, 300),
                   rng.integer(1, 300));
  compare_with_cpu(rng, 40, 17, 8, 16, 16);  // many (n, h) pairs
  // Long sequences of one pair: the sequence runs as parallel segments.
  compare_with_cpu(rng, 1, rng.integer(3000, 9000), 1, rng.integer(20, 70), rng.integer(20, 70));
}

TEST_CASE("cuda linear attention step matches the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (auto [F, M] : {std::pair<int64_t, int64_t>{32, 32}, {33, 47}, {256, 256}, {rng.integer(1, 300), rng.integer(1, 300)}}) {
    const int64_t N = rng.integer(1, 4), H = rng.integer(1, 8);
    INFO("N " << N << " H " << H << " F " << F << " M " << M);
    Tensor S = Tensor::zeros({N, H, F, M}), Z = Tensor::zeros({N, H, F}), out = Tensor::empty({N, H, M});
    Tensor gS = S.to(Device::cuda), gZ = Z.to(Device::cuda), gout = Tensor::empty({N, H, M}, Device::cuda);
    for (int step = 0; step < 5; ++step) {
      Tensor q = positive_features(rng, {N, H, F}), k = positive_features(rng, {N, H, F}), v = rng.randn({N, H, M});
      linear_attention_step(q, k, v, S, Z, out);
      linear_attention_step(q.to(Device::cuda), k.to(Device::cuda), v.to(Device::cuda), gS, gZ, gout);
      INFO("step " << step);
      CHECK(rel_error(gout, out) < 1e-5);
      CHECK(rel_error(gS, S) < 1e-5);
      CHECK(rel_error(gZ, Z) < 1e-5);
    }
  }
}

TEST_CASE("cuda linear attention step and prefix state with a bf16 S match the CPU's") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (auto [F, M] : {std::pair<int64_t, int64_t>{32, 32}, {64, 64}, {33, 47}, {rng.integer(1, 200), rng.integer(1, 200)}}) {
    const int64_t N = rng.integer(1, 4), H = rng.integer(1, 8), L = rng.integer(1, 60);
    INFO("N " << N << " H " << H << " F " << F << " M " << M << " L " << L);
    // The prefix state: float32 sums rounded once.
    Tensor fk = positive_features(rng, {N, L, H, F}), v = rng.randn({N, L, H, M});
    Tensor S = Tensor::empty({N, H, F, M}, Device::cpu, DType::bf16), Z = Tensor::empty({N, H, F});
    Tensor gS = Tensor::empty({N, H, F, M}, Device::cuda, DType::bf16), gZ = Tensor::empty({N, H, F}, Device::cuda);
    linear_attention_state(fk, v, S, Z);
    linear_attention_state(fk.to(Device::cuda), v.to(Device::cuda), gS, gZ);
    // Sums in another order can round the other way at a tie: one bf16 step (2^-8) at most.
    CHECK(rel_error(gZ, Z) < 1e-5);
    CHECK(bf16_error(gS, S) < 4e-3);
    // Steps from the same bf16 state on both devices.
    S = random_bf16(rng, {N, H, F, M});
    gS = S.to(Device::cuda);
    Z = positive_features(rng, {N, H, F});
    gZ = Z.to(Device::cuda);
    Tensor out = Tensor::empty({N, H, M}), gout = Tensor::empty({N, H, M}, Device::cuda);
    for (int step = 0; step < 5; ++step) {
      Tensor q = positive_features(rng, {N, H, F}), k = positive_features(rng, {N, H, F}), vs = rng.randn({N, H, M});
      linear_attention_step(q, k, vs, S, Z, out);
      linear_attention_step(q.to(Device::cuda), k.to(Device::cuda), vs.to(Device::cuda), gS, gZ, gout);
      INFO("step " << step);
      CHECK(rel_error(gout, out) < 4e-3);
      CHECK(bf16_error(gS, S) < 4e-3);
      CHECK(rel_error(gZ, Z) < 1e-5);
    }
  }
}

TEST_CASE("cuda packed step (phi applied to q | k | v rows inside) matches the CPU's") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (const char* map : {"elu", "relu"})
    for (DType state_type : {DType::f32, DType::bf16})
      for (int64_t E : {int64_t(32), int64_t(64), int64_t(33), rng.integer(1, 100)}) {
        const int64_t N = rng.integer(1, 300), H = rng.integer(1, 8);
        INFO("phi " << map << " state " << dtype_name(state_type) << " N " << N << " H " << H << " E " << E);
        auto phi = make_feature_map(map);
        Tensor S = Tensor::zeros({N, H, E, E}, Device::cpu, state_type), Z = Tensor::zeros({N, H, E});
        Tensor gS = S.to(Device::cuda), gZ = Z.to(Device::cuda);
        Tensor out = Tensor::empty({N, H, E}), gout = Tensor::empty({N, H, E}, Device::cuda);
        for (int step = 0; step < 5; ++step) {
          INFO("step " << step);
          Tensor qkv = rng.randn({N, 3, H, E});
          linear_attention_step_packed(qkv, *phi, S, Z, out);
          linear_attention_step_packed(qkv.to(Device::cuda), *phi, gS, gZ, gout);
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
