// The recurrent step and the prefix state with a feature width F unlike the
// values' M (a FAVOR+ state is S [N, H, F, M]), against float64; and the
// packed step with a map that is not elementwise: equal to the map's forward
// followed by the plain step, to the causal parallel pass, and to float64.
#include <cmath>
#include <vector>

#include "attention/attention.h"
#include "attention/favor_reference.h"
#include "attention/feature_map.h"
#include "attention/linear_attention_inputs.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

Tensor positive(Rng& rng, const Shape& shape) {
  std::vector<float> x = rng.normals(shape_numel(shape));
  for (auto& e : x) e = std::exp(e);
  return Tensor::from_vector(x, shape);
}

// One step of eq. 18-20 in float64 for pairs p of fq, fk [P, F], v [P, M].
std::vector<double> step_reference(const std::vector<double>& fq, const std::vector<double>& fk,
                                   const std::vector<double>& v, std::vector<double>& S, std::vector<double>& Z,
                                   int64_t pairs, int64_t F, int64_t M) {
  std::vector<double> out(size_t(pairs * M));
  for (int64_t p = 0; p < pairs; ++p) {
    double den = kLinearAttentionEps;
    for (int64_t f = 0; f < F; ++f) {
      Z[p * F + f] += fk[p * F + f];
      den += fq[p * F + f] * Z[p * F + f];
    }
    for (int64_t m = 0; m < M; ++m) {
      double num = 0;
      for (int64_t f = 0; f < F; ++f) {
        double& s = S[(p * F + f) * M + m];
        s += fk[p * F + f] * v[p * M + m];
        num += fq[p * F + f] * s;
      }
      out[p * M + m] = num / den;
    }
  }
  return out;
}

// Rows [N, H, X] of position l out of x [N, L, H, X].
Tensor at_position(const Tensor& x, int64_t l) {
  const int64_t N = x.dim(0), L = x.dim(1), H = x.dim(2), X = x.dim(3);
  const std::vector<float> all = x.to_vector();
  std::vector<float> part(size_t(N * H * X));
  for (int64_t n = 0; n < N; ++n)
    std::copy_n(all.begin() + (n * L + l) * H * X, H * X, part.begin() + n * H * X);
  return Tensor::from_vector(part, {N, H, X});
}

}  // namespace

TEST_CASE("the step with F unlike M follows eq. 18-20 in float64, and the prefix state sums them") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // Wider and narrower features than values; M = 32 and 64 take the step's fixed-width path.
  for (auto [F, M] : {std::pair<int64_t, int64_t>{112, 32}, {8, 64}, {rng.integer(1, 300), rng.integer(1, 70)}}) {
    const int64_t N = rng.integer(1, 3), H = rng.integer(1, 4), L = rng.integer(1, 12);
    INFO("N " << N << " H " << H << " F " << F << " M " << M << " L " << L);
    Tensor S = Tensor::zeros({N, H, F, M}), Z = Tensor::zeros({N, H, F}), out = Tensor::empty({N, H, M});
    std::vector<double> S_ref(S.numel(), 0.0), Z_ref(Z.numel(), 0.0);
    Tensor fk_all = positive(rng, {N, L, H, F}), v_all = rng.randn({N, L, H, M});
    for (int64_t l = 0; l < L; ++l) {
      INFO("position " << l);
      Tensor fq = positive(rng, {N, H, F}), fk = at_position(fk_all, l), v = at_position(v_all, l);
      linear_attention_step(fq, fk, v, S, Z, out);
      CHECK(rel_error(out, step_reference(to_double(fq), to_double(fk), to_double(v), S_ref, Z_ref, N * H, F, M)) <
            1e-5);
    }
    CHECK(rel_error(S, S_ref) < 1e-5);
    CHECK(rel_error(Z, Z_ref) < 1e-5);
    // The prefix state of the same keys and values in one pass.
    Tensor S2 = Tensor::empty(S.shape()), Z2 = Tensor::empty(Z.shape());
    prefix_state(fk_all, v_all, S2, Z2);
    CHECK(rel_error(S2, S_ref) < 1e-5);
    CHECK(rel_error(Z2, Z_ref) < 1e-5);
  }
}

TEST_CASE("the packed step with favor: its forward then the plain step, the causal parallel pass, and float64") {
  for (DType state_type : {DType::f32, DType::bf16}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed << " state " << dtype_name(state_type));
    Rng rng(seed);
    const int64_t N = rng.integer(1, 3), H = rng.integer(1, 4), E = rng.integer(1, 40), L = rng.integer(1, 16);
    FeatureMapOptions o;
    o.head_dim = E;
    o.features = 2 * rng.integer(1, 80);
    o.seed = rng.gen();
    auto phi = make_feature_map("favor", o);
    const int64_t F = phi->feature_dim(E);
    INFO("N " << N << " H " << H << " E " << E << " F " << F << " L " << L);
    Tensor S = Tensor::zeros({N, H, F, E}, Device::cpu, state_type), Z = Tensor::zeros({N, H, F});
    Tensor S2 = S.clone(), Z2 = Z.clone(), out = Tensor::empty({N, H, E}), out2 = Tensor::empty({N, H, E});
    Tensor fq = Tensor::empty({N, H, F}), fk = Tensor::empty({N, H, F});
    // The whole sequence as the parallel pass sees it: q, k, v [N, L, H, E].
    std::vector<float> qs(N * L * H * E), ks(qs.size()), vs(qs.size());
    std::vector<double> S_ref(size_t(N * H * F * E), 0.0), Z_ref(size_t(N * H * F), 0.0), outs_ref;
    std::vector<float> outs(qs.size());
    for (int64_t l = 0; l < L; ++l) {
      INFO("position " << l);
      const std::vector<float> qkv = rng.normals(N * 3 * H * E);
      linear_attention_step_packed(Tensor::from_vector(qkv, {N, 3, H, E}), *phi, S, Z, out);
      std::vector<float> part[3];
      for (int64_t which = 0; which < 3; ++which) {
        part[which].resize(size_t(N * H * E));
        for (int64_t n = 0; n < N; ++n) {
          std::copy_n(qkv.begin() + (n * 3 + which) * H * E, H * E, part[which].begin() + n * H * E);
          std::copy_n(qkv.begin() + (n * 3 + which) * H * E, H * E,
                      (which == 0 ? qs : which == 1 ? ks : vs).begin() + (n * L + l) * H * E);
        }
      }
      const Tensor q = Tensor::from_vector(part[0], {N, H, E}), k = Tensor::from_vector(part[1], {N, H, E});
      const Tensor v = Tensor::from_vector(part[2], {N, H, E});
      phi->forward(q, fq);
      phi->forward(k, fk);
      linear_attention_step(fq, fk, v, S2, Z2, out2);
      CHECK(out.to_vector() == out2.to_vector());
      CHECK(Z.to_vector() == Z2.to_vector());
      const std::vector<float> o_l = out.to_vector();
      for (int64_t n = 0; n < N; ++n) std::copy_n(o_l.begin() + n * H * E, H * E, outs.begin() + (n * L + l) * H * E);
      if (state_type == DType::f32) {
        const std::vector<double> omega = omega_of(*phi);
        const std::vector<double> want = step_reference(favor_reference(to_double(q), omega, E, F),
                                                        favor_reference(to_double(k), omega, E, F), to_double(v),
                                                        S_ref, Z_ref, N * H, F, E);
        CHECK(rel_error(out, want) < 1e-5);
      }
    }
    if (state_type == DType::bf16) {
      CHECK(std::vector<uint16_t>(S.data_bf16(), S.data_bf16() + S.numel()) ==
            std::vector<uint16_t>(S2.data_bf16(), S2.data_bf16() + S2.numel()));
      continue;
    }
    // The recurrent steps are the causal parallel form position by position (eq. 9 = eq. 16-20).
    Tensor q_all = Tensor::from_vector(qs, {N, L, H, E}), k_all = Tensor::from_vector(ks, {N, L, H, E});
    Tensor fq_all = Tensor::empty({N, L, H, F}), fk_all = Tensor::empty({N, L, H, F});
    Tensor parallel = Tensor::empty({N, L, H, E});
    phi->forward(q_all, fq_all);
    phi->forward(k_all, fk_all);
    causal_linear_attention_forward(fq_all, fk_all, Tensor::from_vector(vs, {N, L, H, E}), Tensor(), parallel);
    CHECK(rel_error(Tensor::from_vector(outs, {N, L, H, E}), parallel) < 1e-5);
  }
}

TEST_CASE("the packed step sizes the state by the map's width and names it when it does not fit") {
  FeatureMapOptions o;
  o.head_dim = 4;
  o.features = 10;
  auto phi = make_feature_map("favor", o);
  Tensor qkv = Tensor::zeros({2, 3, 3, 4}), S = Tensor::zeros({2, 3, 4, 4}), Z = Tensor::zeros({2, 3, 10});
  Tensor out = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(linear_attention_step_packed(qkv, *phi, S, Z, out),
                       doctest::Contains("state S: expected shape [2, 3, 10, 4], got [2, 3, 4, 4]"), lt::Error);
  Tensor S10 = Tensor::zeros({2, 3, 10, 4});
  linear_attention_step_packed(qkv, *phi, S10, Z, out);
  // Zero q and k: every feature is exp(0) / sqrt(F); v = 0 leaves S at zero.
  for (float z : Z.to_vector()) CHECK(z == doctest::Approx(1 / std::sqrt(10.0)));
  for (float s : S10.to_vector()) CHECK(s == 0.f);
}
