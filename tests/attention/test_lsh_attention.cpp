// Reformer LSH attention against a float64 reference of its definition
// (same rotations, so the same bucketing), its gradients against central
// differences of that reference, its limit of one bucket and one chunk
// (shared-QK softmax attention with the self-exclusion rule), and padded
// batches against the unpadded sequences.
#include <cmath>
#include <vector>

#include "attention/attention.h"
#include "attention/lsh_reference.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

struct LshInputs {
  Tensor qk, v, rotations, lengths;
  std::vector<int32_t> lens;
  std::vector<int32_t> order;  // the reference's bucketing
};

// Fresh inputs whose buckets are clear-cut: the best hash value leads the
// next by more than float32 rounding could move it (else draw again).
LshInputs draw_inputs(Rng& rng, const LshDims& d, const LshOptions& o, bool padded) {
  LshInputs in;
  in.lens.assign(d.N, int32_t(d.L));
  if (padded)
    for (int64_t n = 1; n < d.N; ++n) in.lens[n] = int32_t(rng.integer(1, d.L - 1));
  in.lengths = padded ? Tensor::from_vector(in.lens, {d.N}) : Tensor();
  for (int attempt = 0; attempt < 100; ++attempt) {
    in.qk = rng.randn({d.N, d.L, d.H, d.E});
    in.v = rng.randn({d.N, d.L, d.H, d.M});
    std::vector<double> rot;
    if (o.buckets > 1) {
      in.rotations = Tensor::empty({o.rounds, d.E, o.buckets / 2});
      draw_lsh_rotations(uint64_t(rng.integer(0, 1 << 30)), in.rotations);
      rot = to_double(in.rotations);
    }
    double margin = 0;
    in.order = reference_orders(to_double(in.qk), rot, in.lens, d, o, margin);
    if (margin > 1e-3) return in;
  }
  FAIL("no clear-cut bucketing in 100 draws");
  return in;
}

struct LshResult {
  Tensor out, order, lse;
};

LshResult forward(const LshInputs& in, const LshDims& d, const LshOptions& o) {
  LshResult r{Tensor::empty({d.N, d.L, d.H, d.M}), Tensor::empty({d.N, d.H, o.rounds, d.L}, Device::cpu, DType::i32),
              Tensor::empty({d.N, d.H, d.L})};
  lsh_attention_forward(in.qk, in.v, in.rotations, in.lengths, o, r.order, r.lse, r.out);
  return r;
}

LshOptions options(int64_t rounds, int64_t buckets, int64_t chunk, bool causal) {
  LshOptions o;
  o.rounds = rounds, o.buckets = buckets, o.chunk = chunk, o.causal = causal;
  return o;
}

// Shared-QK softmax attention from eq. 2 with k_j = q_j / |q_j|: every other
// position (j <= i when causal), or the position itself when there is none.
std::vector<double> shared_qk_softmax(const Tensor& qk, const Tensor& v, bool causal) {
  const int64_t N = qk.dim(0), L = qk.dim(1), H = qk.dim(2), E = qk.dim(3), M = v.dim(3);
  const std::vector<double> q = to_double(qk), vv = to_double(v);
  std::vector<double> out(N * L * H * M, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> w(L, 0.0);
        double sum = 0;
        for (int64_t j = 0; j < L; ++j) {
          if (j == i || (causal && j > i)) continue;
          double dot = 0, norm = 0;
          for (int64_t e = 0; e < E; ++e) {
            dot += q[((n * L + i) * H + h) * E + e] * q[((n * L + j) * H + h) * E + e];
            norm += q[((n * L + j) * H + h) * E + e] * q[((n * L + j) * H + h) * E + e];
          }
          sum += (w[j] = std::exp(dot / std::sqrt(norm * double(E))));
        }
        if (sum == 0) w[i] = sum = 1;
        for (int64_t j = 0; j < L; ++j)
          for (int64_t m = 0; m < M; ++m) out[((n * L + i) * H + h) * M + m] += w[j] / sum * vv[((n * L + j) * H + h) * M + m];
      }
  return out;
}

}  // namespace

TEST_CASE("LSH attention equals a float64 reference of the same bucketing") {
  const uint64_t seed = fresh_seed();
  Rng rng(seed);
  const LshDims d{3, 37, 2, 8, 5};  // 37: the last chunk is short
  for (int64_t rounds : {1, 4})
    for (bool causal : {false, true})
      for (bool padded : {false, true}) {
        INFO("seed " << seed << " rounds " << rounds << " causal " << causal << " padded " << padded);
        const LshOptions o = options(rounds, 8, 8, causal);
        const LshInputs in = draw_inputs(rng, d, o, padded);
        const LshResult r = forward(in, d, o);
        CHECK(r.order.to_vector_i32() == in.order);
        const std::vector<double> want = reference_lsh(to_double(in.qk), to_double(in.v), in.order, in.lens, d, o);
        CHECK(rel_error(r.out, want) < 1e-5);
      }
}

TEST_CASE("LSH attention gradients match central differences of the reference") {
  const uint64_t seed = fresh_seed();
  Rng rng(seed);
  const LshDims d{2, 13, 2, 4, 3};
  for (int64_t rounds : {1, 3})
    for (bool causal : {false, true}) {
      INFO("seed " << seed << " rounds " << rounds << " causal " << causal);
      const LshOptions o = options(rounds, 4, 4, causal);
      LshInputs in = draw_inputs(rng, d, o, true);
      const LshResult r = forward(in, d, o);
      const Tensor w = rng.randn({d.N, d.L, d.H, d.M});
      Tensor dqk = Tensor::empty(in.qk.shape()), dv = Tensor::empty(in.v.shape());
      lsh_attention_backward(in.qk, in.v, in.lengths, o, r.order, r.lse, r.out, w, dqk, dv);
      // The loss sum(w * out) of the reference with the bucketing held fixed,
      // as Reformer does not differentiate the hashing.
      const std::vector<double> wd = to_double(w);
      std::vector<double> qk = to_double(in.qk), v = to_double(in.v);
      auto loss = [&] {
        const std::vector<double> out = reference_lsh(qk, v, in.order, in.lens, d, o);
        double s = 0;
        for (size_t i = 0; i < out.size(); ++i) s += wd[i] * out[i];
        return s;
      };
      auto central = [&](std::vector<double>& x) {
        std::vector<double> g(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          const double keep = x[i], h = 1e-6;
          x[i] = keep + h;
          const double up = loss();
          x[i] = keep - h;
          g[i] = (up - loss()) / (2 * h);
          x[i] = keep;
        }
        return g;
      };
      CHECK(rel_error(dqk, central(qk)) < 1e-4);
      CHECK(rel_error(dv, central(v)) < 1e-4);
    }
}

TEST_CASE("LSH attention with one bucket and one chunk is shared-QK softmax attention") {
  const uint64_t seed = fresh_seed();
  Rng rng(seed);
  const LshDims d{2, 23, 3, 6, 4};
  for (int64_t rounds : {1, 4})  // four identical rounds merge into the one softmax
    for (bool causal : {false, true})
      for (int64_t chunk : {d.L, d.L + 9}) {
        INFO("seed " << seed << " rounds " << rounds << " causal " << causal << " chunk " << chunk);
        const LshOptions o = options(rounds, 1, chunk, causal);
        const LshInputs in = draw_inputs(rng, d, o, false);
        const LshResult r = forward(in, d, o);
        CHECK(rel_error(r.out, shared_qk_softmax(in.qk, in.v, causal)) < 1e-5);
      }
}

TEST_CASE("LSH attention on a padded batch equals each sequence alone") {
  const uint64_t seed = fresh_seed();
  Rng rng(seed);
  const LshDims d{3, 29, 2, 8, 5};
  for (bool causal : {false, true}) {
    INFO("seed " << seed << " causal " << causal);
    const LshOptions o = options(2, 8, 4, causal);
    LshInputs in = draw_inputs(rng, d, o, true);
    const LshResult r = forward(in, d, o);
    const Tensor dout = rng.randn({d.N, d.L, d.H, d.M});
    Tensor dqk = Tensor::empty(in.qk.shape()), dv = Tensor::empty(in.v.shape());
    lsh_attention_backward(in.qk, in.v, in.lengths, o, r.order, r.lse, r.out, dout, dqk, dv);
    for (int64_t n = 0; n < d.N; ++n) {
      const int64_t len = in.lens[n];
      const LshDims one{1, len, d.H, d.E, d.M};
      auto rows = [&](const Tensor& x, int64_t count) {  // element n's first `count` positions
        const std::vector<float> all = x.to_vector();
        const int64_t per = x.dim(2) * x.dim(3);
        return Tensor::from_vector(std::vector<float>(all.begin() + n * d.L * per, all.begin() + (n * d.L + count) * per),
                                   {1, count, x.dim(2), x.dim(3)});
      };
      LshInputs alone{rows(in.qk, len), rows(in.v, len), in.rotations, Tensor(), {int32_t(len)}, {}};
      const LshResult a = forward(alone, one, o);
      Tensor adqk = Tensor::empty(alone.qk.shape()), adv = Tensor::empty(alone.v.shape());
      lsh_attention_backward(alone.qk, alone.v, Tensor(), o, a.order, a.lse, a.out, rows(dout, len), adqk, adv);
      CHECK(rel_error(rows(r.out, len), a.out) < 1e-6);
      CHECK(rel_error(rows(dqk, len), adqk) < 1e-6);
      CHECK(rel_error(rows(dv, len), adv) < 1e-6);
      for (const Tensor* t : std::vector<const Tensor*>{&r.out, &dqk, &dv}) {
        const std::vector<float> all = rows(*t, d.L).to_vector();
        for (size_t i = len * t->dim(2) * t->dim(3); i < all.size(); ++i) REQUIRE(all[i] == 0.f);
      }
    }
  }
}

TEST_CASE("LSH bucket counts follow the sequence length and bad options are refused") {
  LshOptions o;  // 64 buckets, chunks of 32
  CHECK(lsh_bucket_count(o, 1) == 2);
  CHECK(lsh_bucket_count(o, 128) == 8);
  CHECK(lsh_bucket_count(o, 129) == 10);
  CHECK(lsh_bucket_count(o, 1024) == 64);
  CHECK(lsh_bucket_count(o, 65536) == 64);
  CHECK(lsh_bucket_count(options(1, 1, 32, false), 4096) == 1);
  CHECK_THROWS_WITH_AS(options(1, 3, 32, false).validate(), doctest::Contains("must be 1 or even"), Error);
  CHECK_THROWS_WITH_AS(options(0, 64, 32, false).validate(), doctest::Contains("rounds"), Error);
  CHECK_THROWS_WITH_AS(options(1, 64, 0, false).validate(), doctest::Contains("chunk"), Error);
}
