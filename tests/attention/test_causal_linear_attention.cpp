// Causal linear attention: the chunked parallel form against the masked
// quadratic formula (eq. 8-9) in float64, its gradients against finite
// differences and a float64 analytic reference, and the recurrent step
// (eq. 16-20) against the parallel form, with a float32 or a bfloat16 state;
// the packed step (phi applied inside) against phi + step and float64.
#include <cmath>
#include <cstring>
#include <vector>

#include "attention/attention.h"
#include "attention/feature_map.h"
#include "attention/linear_attention_inputs.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

struct Dims {
  int64_t N, L, H, F, M;
  int64_t qk(int64_t n, int64_t l, int64_t h, int64_t f) const { return ((n * L + l) * H + h) * F + f; }
  int64_t vo(int64_t n, int64_t l, int64_t h, int64_t m) const { return ((n * L + l) * H + h) * M + m; }
};

// out_l = sum_{j<=l} (q_l . k_j) v_j / (sum_{j<=l} q_l . k_j + eps), straight from the quadratic form.
std::vector<double> reference_forward(const Dims& d, const std::vector<double>& q, const std::vector<double>& k,
                                      const std::vector<double>& v) {
  std::vector<double> out(d.N * d.L * d.H * d.M, 0.0);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t l = 0; l < d.L; ++l) {
        double den = kLinearAttentionEps;
        std::vector<double> num(d.M, 0.0);
        for (int64_t j = 0; j <= l; ++j) {
          double a = 0;
          for (int64_t f = 0; f < d.F; ++f) a += q[d.qk(n, l, h, f)] * k[d.qk(n, j, h, f)];
          den += a;
          for (int64_t m = 0; m < d.M; ++m) num[m] += a * v[d.vo(n, j, h, m)];
        }
        for (int64_t m = 0; m < d.M; ++m) out[d.vo(n, l, h, m)] = num[m] / den;
      }
  return out;
}

struct Grads {
  std::vector<double> dq, dk, dv;
};

// Gradients of the quadratic form: with a_lj = q_l . k_j (j <= l), num_l = sum_j a_lj v_j,
// den_l = sum_j a_lj + eps, out_l = num_l / den_l:
//   dnum_l = g_l / den_l,  dden_l = -(g_l . num_l) / den_l^2,  da_lj = dnum_l . v_j + dden_l,
//   dq_l = sum_j da_lj k_j,  dk_j = sum_{l>=j} da_lj q_l,  dv_j = sum_{l>=j} a_lj dnum_l.
Grads reference_backward(const Dims& d, const std::vector<double>& q, const std::vector<double>& k,
                         const std::vector<double>& v, const std::vector<double>& g) {
  Grads r{std::vector<double>(q.size(), 0.0), std::vector<double>(k.size(), 0.0),
          std::vector<double>(v.size(), 0.0)};
  std::vector<double> a(d.L), num(d.M), dnum(d.M);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t l = 0; l < d.L; ++l) {
        double den = kLinearAttentionEps;
        std::fill(num.begin(), num.end(), 0.0);
        for (int64_t j = 0; j <= l; ++j) {
          a[j] = 0;
          for (int64_t f = 0; f < d.F; ++f) a[j] += q[d.qk(n, l, h, f)] * k[d.qk(n, j, h, f)];
          den += a[j];
          for (int64_t m = 0; m < d.M; ++m) num[m] += a[j] * v[d.vo(n, j, h, m)];
        }
        double g_dot_num = 0;
        for (int64_t m = 0; m < d.M; ++m) {
          dnum[m] = g[d.vo(n, l, h, m)] / den;
          g_dot_num += g[d.vo(n, l, h, m)] * num[m];
        }
        const double dden = -g_dot_num / (den * den);
        for (int64_t j = 0; j <= l; ++j) {
          double da = dden;
          for (int64_t m = 0; m < d.M; ++m) {
            da += dnum[m] * v[d.vo(n, j, h, m)];
            r.dv[d.vo(n, j, h, m)] += a[j] * dnum[m];
          }
          for (int64_t f = 0; f < d.F; ++f) {
            r.dq[d.qk(n, l, h, f)] += da * k[d.qk(n, j, h, f)];
            r.dk[d.qk(n, j, h, f)] += da * q[d.qk(n, l, h, f)];
          }
        }
      }
  return r;
}

void check_forward(Rng& rng, const Dims& d) {
  INFO("N " << d.N << " L " << d.L << " H " << d.H << " F " << d.F << " M " << d.M);
  Tensor q = positive_features(rng, {d.N, d.L, d.H, d.F}), k = positive_features(rng, {d.N, d.L, d.H, d.F});
  Tensor v = rng.randn({d.N, d.L, d.H, d.M}), out = Tensor::empty({d.N, d.L, d.H, d.M});
  causal_linear_attention_forward(q, k, v, Tensor(), out);
  CHECK(rel_error(out, reference_forward(d, to_double(q), to_double(k), to_double(v))) < 1e-5);
}

}  // namespace

TEST_CASE("causal linear attention forward equals the masked quadratic form") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // L = 1, L below one chunk, exactly one chunk, a partial last chunk, several chunks.
  for (int64_t L : {int64_t(1), rng.integer(2, 63), int64_t(64), int64_t(65), rng.integer(130, 300)})
    for (int64_t F : {7, 33, 65})
      check_forward(rng, {rng.integer(1, 3), L, rng.integer(1, 3), F, rng.integer(1, 70)});
  check_forward(rng, {1, rng.integer(100, 200), 2, rng.integer(256, 300), rng.integer(256, 300)});
}

TEST_CASE("causal linear attention backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // A short sequence, and one that crosses chunk boundaries. L >= 2 and F >= 2:
  // with one position (out_0 = v_0) or one feature (q cancels) the true dfq or
  // dfk is zero up to eps and only rounding noise is left to compare.
  for (int64_t L : {rng.integer(2, 8), rng.integer(65, 140)}) {
    const Dims d{rng.integer(1, 2), L, rng.integer(1, 2), rng.integer(2, 4), rng.integer(1, 4)};
    INFO("N " << d.N << " L " << d.L << " H " << d.H << " F " << d.F << " M " << d.M);
    Tensor q = positive_features(rng, {d.N, d.L, d.H, d.F}), k = positive_features(rng, {d.N, d.L, d.H, d.F});
    Tensor v = rng.randn({d.N, d.L, d.H, d.M}), out = Tensor::empty({d.N, d.L, d.H, d.M});
    std::vector<float> w = rng.normals(out.numel());
    auto loss = [&] {
      causal_linear_attention_forward(q, k, v, Tensor(), out);
      return dot(out, w);
    };
    Tensor dout = Tensor::from_vector(w, out.shape());
    Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
    causal_linear_attention_backward(q, k, v, Tensor(), dout, dq, dk, dv);
    CHECK(rel_error(dq, numeric_grad(q, loss)) < 1e-2);
    CHECK(rel_error(dk, numeric_grad(k, loss)) < 1e-2);
    CHECK(rel_error(dv, numeric_grad(v, loss)) < 1e-2);
  }
}

TEST_CASE("causal linear attention backward matches the float64 quadratic-form gradient") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t F : {7, 33, 65, 260}) {
    const Dims d{rng.integer(1, 2), rng.integer(2, 200), rng.integer(1, 3), F,
                 F == 260 ? rng.integer(256, 270) : rng.integer(1, 70)};
    INFO("N " << d.N << " L " << d.L << " H " << d.H << " F " << d.F << " M " << d.M);
    Tensor q = positive_features(rng, {d.N, d.L, d.H, d.F}), k = positive_features(rng, {d.N, d.L, d.H, d.F});
    Tensor v = rng.randn({d.N, d.L, d.H, d.M}), dout = rng.randn({d.N, d.L, d.H, d.M});
    Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
    causal_linear_attention_backward(q, k, v, Tensor(), dout, dq, dk, dv);
    Grads ref = reference_backward(d, to_double(q), to_double(k), to_double(v), to_double(dout));
    CHECK(rel_error(dq, ref.dq) < 1e-5);
    CHECK(rel_error(dk, ref.dk) < 1e-5);
    CHECK(rel_error(dv, ref.dv) < 1e-5);
  }
}

TEST_CASE("the recurrent step reproduces the parallel causal form position by position") {
  // M of 32 and 64 take the step's register-resident path; others the generic loop.
  for (int64_t fixed_m : {0, 32, 64}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    const Dims d{rng.integer(1, 3), rng.integer(1, 100), rng.integer(1, 4), rng.integer(1, 70),
                 fixed_m ? fixed_m : rng.integer(1, 70)};
    INFO("N " << d.N << " L " << d.L << " H " << d.H << " F " << d.F << " M " << d.M);
    Tensor q = positive_features(rng, {d.N, d.L, d.H, d.F}), k = positive_features(rng, {d.N, d.L, d.H, d.F});
    Tensor v = rng.randn({d.N, d.L, d.H, d.M}), out = Tensor::empty({d.N, d.L, d.H, d.M});
    causal_linear_attention_forward(q, k, v, Tensor(), out);

    const std::vector<float> qv = q.to_vector(), kv = k.to_vector(), vv = v.to_vector(), ov = out.to_vector();
    Tensor S = Tensor::zeros({d.N, d.H, d.F, d.M}), Z = Tensor::zeros({d.N, d.H, d.F});
    Tensor qs = Tensor::empty({d.N, d.H, d.F}), ks = Tensor::empty({d.N, d.H, d.F});
    Tensor vs = Tensor::empty({d.N, d.H, d.M}), os = Tensor::empty({d.N, d.H, d.M});
    std::vector<float> qt(d.N * d.H * d.F), kt(qt.size()), vt(d.N * d.H * d.M);
    std::vector<double> want(vt.size());
    for (int64_t l = 0; l < d.L; ++l) {
      for (int64_t n = 0; n < d.N; ++n)
        for (int64_t h = 0; h < d.H; ++h) {
          for (int64_t f = 0; f < d.F; ++f) {
            qt[(n * d.H + h) * d.F + f] = qv[d.qk(n, l, h, f)];
            kt[(n * d.H + h) * d.F + f] = kv[d.qk(n, l, h, f)];
          }
          for (int64_t m = 0; m < d.M; ++m) {
            vt[(n * d.H + h) * d.M + m] = vv[d.vo(n, l, h, m)];
            want[(n * d.H + h) * d.M + m] = ov[d.vo(n, l, h, m)];
          }
        }
      qs.copy_from(Tensor::from_vector(qt, qs.shape()));
      ks.copy_from(Tensor::from_vector(kt, ks.shape()));
      vs.copy_from(Tensor::from_vector(vt, vs.shape()));
      linear_attention_step(qs, ks, vs, S, Z, os);
      INFO("position " << l);
      CHECK(rel_error(os, want) < 1e-5);
    }

    // After L steps the state is the full sums (eq. 18-19).
    std::vector<double> S_want(S.numel(), 0.0), Z_want(Z.numel(), 0.0);
    for (int64_t n = 0; n < d.N; ++n)
      for (int64_t h = 0; h < d.H; ++h)
        for (int64_t l = 0; l < d.L; ++l)
          for (int64_t f = 0; f < d.F; ++f) {
            const double kf = kv[d.qk(n, l, h, f)];
            Z_want[(n * d.H + h) * d.F + f] += kf;
            for (int64_t m = 0; m < d.M; ++m) S_want[((n * d.H + h) * d.F + f) * d.M + m] += kf * vv[d.vo(n, l, h, m)];
          }
    CHECK(rel_error(S, S_want) < 1e-5);
    CHECK(rel_error(Z, Z_want) < 1e-5);
  }
}

static std::vector<float> bf16_values(const Tensor& t) {
  std::vector<float> out(t.numel());
  const uint16_t* bits = t.data_bf16();
  for (size_t i = 0; i < out.size(); ++i) {
    const uint32_t u = uint32_t(bits[i]) << 16;
    std::memcpy(&out[i], &u, 4);
  }
  return out;
}

TEST_CASE("a bfloat16 state: the step sums in float32 and rounds S when it stores it") {
  for (int64_t fixed_m : {0, 32, 64}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed);
    Rng rng(seed);
    const int64_t N = rng.integer(1, 3), H = rng.integer(1, 4), F = rng.integer(1, 70),
                  M = fixed_m ? fixed_m : rng.integer(1, 70), L = rng.integer(20, 60);
    INFO("N " << N << " H " << H << " F " << F << " M " << M << " L " << L);
    Tensor S = Tensor::zeros({N, H, F, M}, Device::cpu, DType::bf16), Z = Tensor::zeros({N, H, F});
    Tensor out = Tensor::empty({N, H, M});
    // float64 references: S rounded to bfloat16 at every store (what the step
    // should do), and S kept exact (what a float32 state approximates).
    std::vector<double> S_rounded(S.numel(), 0.0), S_exact(S.numel(), 0.0), Z_ref(Z.numel(), 0.0);
    double err_rounded = 0, err_exact = 0;
    for (int64_t l = 0; l < L; ++l) {
      Tensor q = positive_features(rng, {N, H, F}), k = positive_features(rng, {N, H, F});
      Tensor v = rng.randn({N, H, M});
      linear_attention_step(q, k, v, S, Z, out);
      const std::vector<float> qv = q.to_vector(), kv = k.to_vector(), vv = v.to_vector();
      std::vector<double> want_rounded(out.numel()), want_exact(out.numel());
      for (int64_t p = 0; p < N * H; ++p) {
        double den = kLinearAttentionEps;
        for (int64_t f = 0; f < F; ++f) {
          Z_ref[p * F + f] += kv[p * F + f];
          den += qv[p * F + f] * Z_ref[p * F + f];
        }
        for (int64_t m = 0; m < M; ++m) {
          double a = 0, b = 0;
          for (int64_t f = 0; f < F; ++f) {
            const int64_t i = (p * F + f) * M + m;
            const double inc = double(kv[p * F + f]) * vv[p * M + m];
            const double s = S_rounded[i] + inc;  // the output reads the sum before rounding
            a += qv[p * F + f] * s;
            S_rounded[i] = bf16_round(s);
            S_exact[i] += inc;
            b += qv[p * F + f] * S_exact[i];
          }
          want_rounded[p * M + m] = a / den;
          want_exact[p * M + m] = b / den;
        }
      }
      err_rounded = std::max(err_rounded, rel_error(out, want_rounded));
      err_exact = std::max(err_exact, rel_error(out, want_exact));
    }
    // A float32 sum rounds to the other side of a tie now and then (one bf16
    // unit, 2^-8 of one entry): close to the rounded reference, and much
    // closer to it than to the exact one.
    CHECK(err_rounded < 1e-3);
    CHECK(err_rounded < err_exact / 4);
    CHECK(rel_error(bf16_values(S), S_rounded) < 1e-3);
    CHECK(rel_error(bf16_values(S), S_rounded) < rel_error(bf16_values(S), S_exact) / 4);
    CHECK(rel_error(Z, Z_ref) < 1e-5);

    // The state of a whole prefix (prefill) into a bfloat16 S: the float32 sums, rounded.
    Tensor fk = positive_features(rng, {N, L, H, F}), vl = rng.randn({N, L, H, M});
    prefix_state(fk, vl, S, Z);
    const std::vector<float> fkv = fk.to_vector(), vlv = vl.to_vector();
    std::vector<double> sum(S.numel(), 0.0), sum_rounded(S.numel());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t f = 0; f < F; ++f)
          for (int64_t m = 0; m < M; ++m) {
            double& s = sum[((n * H + h) * F + f) * M + m];
            for (int64_t l = 0; l < L; ++l) s += double(fkv[((n * L + l) * H + h) * F + f]) * vlv[((n * L + l) * H + h) * M + m];
          }
    for (size_t i = 0; i < sum.size(); ++i) sum_rounded[i] = bf16_round(sum[i]);
    CHECK(rel_error(bf16_values(S), sum_rounded) < 1e-3);
    CHECK(rel_error(bf16_values(S), sum_rounded) < rel_error(bf16_values(S), sum) / 4);
  }
}

TEST_CASE("the packed step applies phi to q | k | v rows itself: equal to phi + step, and to float64") {
  for (const char* map : {"elu", "relu"})
    for (int64_t fixed_e : {0, 32, 64})
      for (DType state_type : {DType::f32, DType::bf16}) {
        uint64_t seed = fresh_seed();
        INFO("seed " << seed << " phi " << map << " state " << dtype_name(state_type));
        Rng rng(seed);
        const int64_t N = rng.integer(1, 3), H = rng.integer(1, 4), E = fixed_e ? fixed_e : rng.integer(1, 70);
        const int64_t L = rng.integer(1, 20);
        INFO("N " << N << " H " << H << " E " << E << " L " << L);
        auto phi = make_feature_map(map);
        Tensor S = Tensor::zeros({N, H, E, E}, Device::cpu, state_type), Z = Tensor::zeros({N, H, E});
        Tensor S2 = S.clone(), Z2 = Z.clone();
        Tensor out = Tensor::empty({N, H, E}), out2 = Tensor::empty({N, H, E});
        Tensor q = Tensor::empty({N, H, E}), k = Tensor::empty({N, H, E}), v = Tensor::empty({N, H, E});
        Tensor fq = Tensor::empty({N, H, E}), fk = Tensor::empty({N, H, E});
        std::vector<double> S_ref(N * H * E * E, 0.0), Z_ref(N * H * E, 0.0), want(N * H * E);
        auto phi_ref = [&](double x) { return std::string(map) == "elu" ? (x > 0 ? x + 1 : std::exp(x)) : std::max(x, 0.0); };
        for (int64_t l = 0; l < L; ++l) {
          INFO("position " << l);
          const std::vector<float> qkv_v = rng.normals(N * 3 * H * E);
          linear_attention_step_packed(Tensor::from_vector(qkv_v, {N, 3, H, E}), *phi, S, Z, out);

          // The same step from separate tensors, phi applied by the feature map.
          std::vector<float> part(N * H * E);
          for (int64_t which = 0; which < 3; ++which) {
            for (int64_t n = 0; n < N; ++n)
              std::copy_n(qkv_v.begin() + (n * 3 + which) * H * E, H * E, part.begin() + n * H * E);
            (which == 0 ? q : which == 1 ? k : v).copy_from(Tensor::from_vector(part, {N, H, E}));
          }
          phi->forward(q, fq);
          phi->forward(k, fk);
          linear_attention_step(fq, fk, v, S2, Z2, out2);
          CHECK(out.to_vector() == out2.to_vector());
          CHECK(Z.to_vector() == Z2.to_vector());

          if (state_type == DType::bf16) continue;  // the unpacked step's own test covers the rounding
          for (int64_t p = 0; p < N * H; ++p) {
            const int64_t n = p / H, h = p % H;
            auto at = [&](int64_t which, int64_t e) { return double(qkv_v[((n * 3 + which) * H + h) * E + e]); };
            double den = kLinearAttentionEps;
            for (int64_t f = 0; f < E; ++f) {
              Z_ref[p * E + f] += phi_ref(at(1, f));
              den += phi_ref(at(0, f)) * Z_ref[p * E + f];
            }
            for (int64_t m = 0; m < E; ++m) {
              double num = 0;
              for (int64_t f = 0; f < E; ++f) {
                S_ref[(p * E + f) * E + m] += phi_ref(at(1, f)) * at(2, m);
                num += phi_ref(at(0, f)) * S_ref[(p * E + f) * E + m];
              }
              want[p * E + m] = num / den;
            }
          }
          CHECK(rel_error(out, want) < 1e-5);
          CHECK(rel_error(Z, Z_ref) < 1e-5);
        }
        if (state_type == DType::bf16)
          CHECK(bf16_values(S) == bf16_values(S2));
        else
          CHECK(rel_error(S, S_ref) < 1e-5);
      }
}

namespace {
// A map claiming to be elementwise while changing the width: the fused step,
// which applies the function itself to E entries, must refuse it.
class WideMap final : public FeatureMap {
 public:
  std::string name() const override { return "wide"; }
  int64_t feature_dim(int64_t head_dim) const override { return 2 * head_dim; }
  Elementwise elementwise() const override { return Elementwise::relu; }
  void forward(const Tensor&, Tensor&) const override {}
  void backward(const Tensor&, const Tensor&, Tensor&) const override {}
};
}  // namespace

TEST_CASE("causal linear attention rejects mismatched shapes with messages naming them") {
  Tensor q = Tensor::zeros({2, 5, 3, 4}), k = Tensor::zeros({2, 5, 3, 4}), v = Tensor::zeros({2, 5, 3, 6});
  Tensor out = Tensor::zeros({2, 5, 3, 6});
  Tensor short_k = Tensor::zeros({2, 4, 3, 4}), bad_v = Tensor::zeros({2, 5, 2, 6}), bad_out = Tensor::zeros({2, 5, 3, 5});
  CHECK_THROWS_WITH_AS(causal_linear_attention_forward(q, short_k, v, Tensor(), out),
                       doctest::Contains("keys [2, 4, 3, 4] must have the queries' shape [2, 5, 3, 4]"), lt::Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention_forward(q, k, bad_v, Tensor(), out),
                       doctest::Contains("values [2, 5, 2, 6] do not match queries [2, 5, 3, 4]"), lt::Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention_forward(q, k, v, Tensor(), bad_out),
                       doctest::Contains("expected shape [2, 5, 3, 6], got [2, 5, 3, 5]"), lt::Error);
  Tensor dq = Tensor::zeros({2, 5, 3, 4}), dk = Tensor::zeros({2, 5, 3, 3}), dv = Tensor::zeros({2, 5, 3, 6});
  CHECK_THROWS_WITH_AS(causal_linear_attention_backward(q, k, v, Tensor(), out, dq, dk, dv),
                       doctest::Contains("dfk: expected shape [2, 5, 3, 4], got [2, 5, 3, 3]"), lt::Error);
  // TF32 is the tensor cores' format: the CPU refuses it as the products do.
  CHECK_THROWS_WITH_AS(causal_linear_attention_forward(q, k, v, Tensor(), out, true),
                       doctest::Contains("causal_linear_attention_forward: tf32 needs CUDA"), lt::Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention_backward(q, k, v, Tensor(), out, dq, k, dv, true),
                       doctest::Contains("causal_linear_attention_backward: tf32 needs CUDA"), lt::Error);

  Tensor qs = Tensor::zeros({2, 3, 4}), vs = Tensor::zeros({2, 3, 6}), os = Tensor::zeros({2, 3, 6});
  Tensor S = Tensor::zeros({2, 3, 6, 4}), Z = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(linear_attention_step(qs, qs, vs, S, Z, os),
                       doctest::Contains("state S: expected shape [2, 3, 4, 6], got [2, 3, 6, 4]"), lt::Error);

  Tensor qkv = Tensor::zeros({2, 3, 3, 4}), Sp = Tensor::zeros({2, 3, 4, 4}), Zp = Tensor::zeros({2, 3, 4});
  Tensor op = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(linear_attention_step_packed(qkv.reshape({2, 9, 4}), *make_feature_map("elu"), Sp, Zp, op),
                       doctest::Contains("projections must be [N, 3, H, E], got [2, 9, 4]"), lt::Error);
  CHECK_THROWS_WITH_AS(linear_attention_step_packed(qkv, WideMap(), Sp, Zp, op),
                       doctest::Contains("elementwise feature map 'wide' gives 8 features for head dimension 4"),
                       lt::Error);
  CHECK_THROWS_WITH_AS(linear_attention_step_packed(qkv, *make_feature_map("relu"), S, Zp, op),
                       doctest::Contains("state S: expected shape [2, 3, 4, 4], got [2, 3, 6, 4]"), lt::Error);
}
