#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "attention/attention.h"
#include "attention/feature_map.h"
#include "attention/linear_attention_inputs.h"
#include "backend/bf16.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

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
  for (auto [F, M] : {std::pair<int64_t, int64_t>{32, 32}, {33, 47}, {256, 256}, {40, 16}, {7, 64},
                      {rng.integer(1, 300), rng.integer(1, 300)}}) {
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
  for (auto [F, M] : {std::pair<int64_t, int64_t>{32, 32}, {64, 64}, {33, 47}, {40, 16}, {7, 128},
                      {rng.integer(1, 200), rng.integer(1, 200)}}) {
    const int64_t N = rng.integer(1, 4), H = rng.integer(1, 8), L = rng.integer(1, 60);
    INFO("N " << N << " H " << H << " F " << F << " M " << M << " L " << L);
    // The prefix state: float32 sums rounded once.
    Tensor fk = positive_features(rng, {N, L, H, F}), v = rng.randn({N, L, H, M});
    Tensor S = Tensor::empty({N, H, F, M}, Device::cpu, DType::bf16), Z = Tensor::empty({N, H, F});
    Tensor gS = Tensor::empty({N, H, F, M}, Device::cuda, DType::bf16), gZ = Tensor::empty({N, H, F}, Device::cuda);
    prefix_state(fk, v, S, Z);
    prefix_state(fk.to(Device::cuda), v.to(Device::cuda), gS, gZ);
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

namespace {

// Random lengths in [0, L], one full and (for N > 2) one empty.
Tensor random_lengths(Rng& rng, int64_t N, int64_t L) {
  std::vector<int32_t> lengths(N);
  for (auto& len : lengths) len = int32_t(rng.integer(0, L));
  lengths[0] = int32_t(L);
  if (N > 2) lengths[N - 1] = 0;
  return Tensor::from_vector(lengths, {N});
}

// tf32: on the tensor cores, which keep 10 bits of each operand, of A B^T
// and of the state a chunk starts from, so outputs come within about 1e-3 of
// the CPU's fp32, and dfq, which sums terms that largely cancel, within a few
// times that. A wrong mask, chunk or state is off by far more: a missing
// diagonal alone is a whole term of L's.
void compare_masked_with_cpu(Rng& rng, int64_t N, int64_t L, int64_t H, int64_t F, int64_t M, bool tf32 = false) {
  INFO((tf32 ? "tf32 " : "") << "N " << N << " L " << L << " H " << H << " F " << F << " M " << M);
  const Tensor lengths = random_lengths(rng, N, L);
  Tensor q = positive_features(rng, {N, L, H, F}), k = positive_features(rng, {N, L, H, F});
  Tensor v = rng.randn({N, L, H, M}), dout = rng.randn({N, L, H, M});
  Tensor out = Tensor::empty(v.shape()), dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()),
         dv = Tensor::empty(v.shape());
  causal_linear_attention_forward(q, k, v, lengths, out);
  causal_linear_attention_backward(q, k, v, lengths, dout, dq, dk, dv);

  const Tensor glen = lengths.to(Device::cuda);
  Tensor gq = q.to(Device::cuda), gk = k.to(Device::cuda), gv = v.to(Device::cuda);
  Tensor gout = Tensor::empty(v.shape(), Device::cuda), gdq = Tensor::empty(q.shape(), Device::cuda),
         gdk = Tensor::empty(k.shape(), Device::cuda), gdv = Tensor::empty(v.shape(), Device::cuda);
  causal_linear_attention_forward(gq, gk, gv, glen, gout, tf32);
  causal_linear_attention_backward(gq, gk, gv, glen, dout.to(Device::cuda), gdq, gdk, gdv, tf32);
  const double out_bound = tf32 ? 5e-3 : 1e-5, grad_bound = tf32 ? 2e-2 : 5e-5;
  CHECK(rel_error(gout, out) < out_bound);
  CHECK(rel_error(gdq, dq) < grad_bound);
  CHECK(rel_error(gdk, dk) < grad_bound);
  CHECK(rel_error(gdv, dv) < grad_bound);
  // Padding is exactly zero on the GPU too (the CPU's is, see the CPU tests).
  const std::vector<int32_t> len = lengths.to_vector_i32();
  const std::vector<float> o = gout.to_vector(), g = gdk.to_vector();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = len[n] * H * M; i < L * H * M; ++i) REQUIRE(o[n * L * H * M + i] == 0.f);
    for (int64_t i = len[n] * H * F; i < L * H * F; ++i) REQUIRE(g[n * L * H * F + i] == 0.f);
  }
}

// continue from the same random state on both devices, with or without lengths.
void compare_continue_with_cpu(Rng& rng, DType state_type, bool masked, int64_t N, int64_t L, int64_t H, int64_t F,
                               int64_t M) {
  INFO("state " << dtype_name(state_type) << (masked ? " masked" : "") << " N " << N << " L " << L << " H " << H
                << " F " << F << " M " << M);
  const Tensor lengths = masked ? random_lengths(rng, N, L) : Tensor();
  Tensor q = positive_features(rng, {N, L, H, F}), k = positive_features(rng, {N, L, H, F}), v = rng.randn({N, L, H, M});
  Tensor S = state_type == DType::bf16 ? random_bf16(rng, {N, H, F, M}) : rng.randn({N, H, F, M});
  Tensor Z = positive_features(rng, {N, H, F});
  Tensor gS = S.to(Device::cuda), gZ = Z.to(Device::cuda);
  Tensor out = Tensor::empty(v.shape()), gout = Tensor::empty(v.shape(), Device::cuda);
  causal_linear_attention_continue(q, k, v, lengths, S, Z, out);
  causal_linear_attention_continue(q.to(Device::cuda), k.to(Device::cuda), v.to(Device::cuda),
                                   masked ? lengths.to(Device::cuda) : Tensor(), gS, gZ, gout);
  CHECK(rel_error(gout, out) < 1e-5);
  CHECK(rel_error(gZ, Z) < 1e-5);
  if (state_type == DType::bf16)
    CHECK(bf16_error(gS, S) < 4e-3);  // sums in another order can round a tie the other way
  else
    CHECK(rel_error(gS, S) < 1e-5);
}

}  // namespace

TEST_CASE("cuda causal linear attention on the tensor cores (tf32) matches the CPU within TF32's rounding") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // L >= 8 and F >= 7: over fewer positions or features dfq is small beside
  // TF32's rounding of the operands (with one position it is zero), and
  // mostly noise is compared.
  const bool tf32 = true;
  compare_masked_with_cpu(rng, 1, 8, 1, 7, 5, tf32);                          // one chunk, mostly padding
  compare_masked_with_cpu(rng, 3, rng.integer(8, 31), 2, 32, 32, tf32);      // within a chunk
  compare_masked_with_cpu(rng, 3, 32 * rng.integer(1, 9), 2, 32, 32, tf32);  // whole chunks
  compare_masked_with_cpu(rng, 4, rng.integer(33, 800), 6, 32, 32, tf32);    // the models' heads
  compare_masked_with_cpu(rng, 1, rng.integer(100, 300), 2, 64, 63, tf32);   // the widest taken
  compare_masked_with_cpu(rng, 1, rng.integer(100, 300), 2, 64, 64, tf32);   // M + 1 = 65: the forward in fp32
  compare_masked_with_cpu(rng, 2, rng.integer(50, 200), 2, rng.integer(65, 200), rng.integer(1, 100), tf32);  // fp32
  compare_masked_with_cpu(rng, rng.integer(1, 3), rng.integer(8, 400), rng.integer(1, 4), rng.integer(7, 64),
                          rng.integer(1, 63), tf32);
  compare_masked_with_cpu(rng, 40, 17, 8, 16, 16, tf32);                     // many (n, h) pairs
  compare_masked_with_cpu(rng, 1, rng.integer(3000, 9000), 1, 32, 32, tf32); // many chunks
}

TEST_CASE("cuda causal linear attention with lengths matches the CPU, padding exactly zero") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  compare_masked_with_cpu(rng, 3, rng.integer(2, 300), rng.integer(1, 4), 33, 47);
  compare_masked_with_cpu(rng, 4, rng.integer(50, 200), 2, rng.integer(65, 300), rng.integer(1, 100));  // F tiles
  compare_masked_with_cpu(rng, 2, rng.integer(3000, 9000), 1, 32, 32);  // parallel segments
}

TEST_CASE("cuda causal_linear_attention_continue matches the CPU from a float32 or bfloat16 state") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (DType state_type : {DType::f32, DType::bf16})
    for (bool masked : {false, true}) {
      compare_continue_with_cpu(rng, state_type, masked, 1, 1, 2, 32, 32);  // one position: a step
      compare_continue_with_cpu(rng, state_type, masked, 3, rng.integer(2, 300), rng.integer(1, 4), 33, 47);
      compare_continue_with_cpu(rng, state_type, masked, 3, rng.integer(2, 200), 2, rng.integer(65, 300),
                                rng.integer(1, 300));  // several feature tiles add atomically
      compare_continue_with_cpu(rng, state_type, masked, 1, rng.integer(3000, 9000), 1, rng.integer(20, 70),
                                rng.integer(20, 70));  // parallel segments, each from the scanned initial state
    }
}

TEST_CASE("cuda continue in chunks equals one cuda pass over the whole sequence") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 3), L = rng.integer(100, 3000), H = rng.integer(1, 3), F = 40, M = 24;
  INFO("N " << N << " L " << L << " H " << H);
  Tensor q = positive_features(rng, {N, L, H, F}), k = positive_features(rng, {N, L, H, F}), v = rng.randn({N, L, H, M});
  const Tensor S0 = rng.randn({N, H, F, M}).to(Device::cuda), Z0 = positive_features(rng, {N, H, F}).to(Device::cuda);
  Tensor S = S0.clone(), Z = Z0.clone(), whole = Tensor::empty(v.shape(), Device::cuda);
  causal_linear_attention_continue(q.to(Device::cuda), k.to(Device::cuda), v.to(Device::cuda), Tensor(), S, Z, whole);

  // Chunks of uneven sizes (1 included), cut on the host.
  Tensor Sc = S0.clone(), Zc = Z0.clone();
  const std::vector<float> qv = q.to_vector(), kv = k.to_vector(), vv = v.to_vector(), wv = whole.to_vector();
  std::vector<double> want;
  std::vector<float> got;
  for (int64_t t0 = 0; t0 < L;) {
    const int64_t c = t0 == 0 ? 1 : std::min(L - t0, rng.integer(1, 700));
    auto cut = [&](const std::vector<float>& x, int64_t D) {
      std::vector<float> part(N * c * H * D);
      for (int64_t n = 0; n < N; ++n)
        std::copy_n(x.begin() + (n * L + t0) * H * D, c * H * D, part.begin() + n * c * H * D);
      return Tensor::from_vector(part, {N, c, H, D}, Device::cuda);
    };
    Tensor part = Tensor::empty({N, c, H, M}, Device::cuda);
    causal_linear_attention_continue(cut(qv, F), cut(kv, F), cut(vv, M), Tensor(), Sc, Zc, part);
    const std::vector<float> pv = part.to_vector();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < c * H * M; ++i) {
        got.push_back(pv[n * c * H * M + i]);
        want.push_back(wv[(n * L + t0) * H * M + i]);
      }
    t0 += c;
  }
  CHECK(rel_error(got, want) < 1e-5);
  CHECK(rel_error(Sc, S) < 1e-5);
  CHECK(rel_error(Zc, Z) < 1e-5);
}
