// Causal linear attention: the chunked parallel form against the masked
// quadratic formula (eq. 8-9) in float64, its gradients against finite
// differences and a float64 analytic reference, and the recurrent step
// (eq. 16-20) against the parallel form.
#include <cmath>
#include <vector>

#include "lt/attention.h"
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
  causal_linear_attention_forward(q, k, v, out);
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
      causal_linear_attention_forward(q, k, v, out);
      return dot(out, w);
    };
    Tensor dout = Tensor::from_vector(w, out.shape());
    Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
    causal_linear_attention_backward(q, k, v, dout, dq, dk, dv);
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
    causal_linear_attention_backward(q, k, v, dout, dq, dk, dv);
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
    causal_linear_attention_forward(q, k, v, out);

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

TEST_CASE("causal linear attention rejects mismatched shapes with messages naming them") {
  Tensor q = Tensor::zeros({2, 5, 3, 4}), k = Tensor::zeros({2, 5, 3, 4}), v = Tensor::zeros({2, 5, 3, 6});
  Tensor out = Tensor::zeros({2, 5, 3, 6});
  Tensor short_k = Tensor::zeros({2, 4, 3, 4}), bad_v = Tensor::zeros({2, 5, 2, 6}), bad_out = Tensor::zeros({2, 5, 3, 5});
  CHECK_THROWS_WITH_AS(causal_linear_attention_forward(q, short_k, v, out),
                       doctest::Contains("keys [2, 4, 3, 4] must have the queries' shape [2, 5, 3, 4]"), lt::Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention_forward(q, k, bad_v, out),
                       doctest::Contains("values [2, 5, 2, 6] do not match queries [2, 5, 3, 4]"), lt::Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention_forward(q, k, v, bad_out),
                       doctest::Contains("expected shape [2, 5, 3, 6], got [2, 5, 3, 5]"), lt::Error);
  Tensor dq = Tensor::zeros({2, 5, 3, 4}), dk = Tensor::zeros({2, 5, 3, 3}), dv = Tensor::zeros({2, 5, 3, 6});
  CHECK_THROWS_WITH_AS(causal_linear_attention_backward(q, k, v, out, dq, dk, dv),
                       doctest::Contains("dfk: expected shape [2, 5, 3, 4], got [2, 5, 3, 3]"), lt::Error);

  Tensor qs = Tensor::zeros({2, 3, 4}), vs = Tensor::zeros({2, 3, 6}), os = Tensor::zeros({2, 3, 6});
  Tensor S = Tensor::zeros({2, 3, 6, 4}), Z = Tensor::zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(linear_attention_step(qs, qs, vs, S, Z, os),
                       doctest::Contains("state S: expected shape [2, 3, 4, 6], got [2, 3, 6, 4]"), lt::Error);
}
