#include <cmath>

#include "attention/attention.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

struct Dims {
  int64_t N, L, S, H, E, M;
};

Dims random_dims(Rng& rng, bool causal, int64_t max_len = 23) {
  Dims d{rng.integer(1, 3), rng.integer(1, max_len), 0, rng.integer(1, 3), rng.integer(1, 17), rng.integer(1, 17)};
  d.S = causal ? d.L : rng.integer(1, max_len);
  return d;
}

// Eq. 2 in float64 with explicit exp and normalisation: probs [N,H,L,S], out [N,L,H,M].
struct Reference {
  std::vector<double> probs, out;
};

Reference reference_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Dims& d, bool causal) {
  auto qv = to_double(q), kv = to_double(k), vv = to_double(v);
  Reference r{std::vector<double>(d.N * d.H * d.L * d.S, 0.0), std::vector<double>(d.N * d.L * d.H * d.M, 0.0)};
  const double temp = 1 / std::sqrt(double(d.E));
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t l = 0; l < d.L; ++l) {
        double* p = &r.probs[((n * d.H + h) * d.L + l) * d.S];
        const int64_t keys = causal ? l + 1 : d.S;
        double total = 0;
        for (int64_t s = 0; s < keys; ++s) {
          double dot = 0;
          for (int64_t e = 0; e < d.E; ++e)
            dot += qv[((n * d.L + l) * d.H + h) * d.E + e] * kv[((n * d.S + s) * d.H + h) * d.E + e];
          p[s] = std::exp(temp * dot);
          total += p[s];
        }
        for (int64_t s = 0; s < keys; ++s) p[s] /= total;
        for (int64_t m = 0; m < d.M; ++m) {
          double acc = 0;
          for (int64_t s = 0; s < keys; ++s) acc += p[s] * vv[((n * d.S + s) * d.H + h) * d.M + m];
          r.out[((n * d.L + l) * d.H + h) * d.M + m] = acc;
        }
      }
  return r;
}

// Analytic gradients of eq. 2 in float64 (for sizes where finite differences are too slow).
struct Grads {
  std::vector<double> dq, dk, dv;
};

Grads reference_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout, const Dims& d,
                         bool causal) {
  auto qv = to_double(q), kv = to_double(k), vv = to_double(v), g = to_double(dout);
  const std::vector<double> P = reference_forward(q, k, v, d, causal).probs;
  Grads r{std::vector<double>(qv.size(), 0.0), std::vector<double>(kv.size(), 0.0), std::vector<double>(vv.size(), 0.0)};
  const double temp = 1 / std::sqrt(double(d.E));
  std::vector<double> dP(d.S);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t l = 0; l < d.L; ++l) {
        const double* p = &P[((n * d.H + h) * d.L + l) * d.S];
        const double* gl = &g[((n * d.L + l) * d.H + h) * d.M];
        double rowdot = 0;
        for (int64_t s = 0; s < d.S; ++s) {
          dP[s] = 0;
          for (int64_t m = 0; m < d.M; ++m) {
            dP[s] += gl[m] * vv[((n * d.S + s) * d.H + h) * d.M + m];
            r.dv[((n * d.S + s) * d.H + h) * d.M + m] += p[s] * gl[m];
          }
          rowdot += p[s] * dP[s];
        }
        for (int64_t s = 0; s < d.S; ++s) {
          const double da = temp * p[s] * (dP[s] - rowdot);
          for (int64_t e = 0; e < d.E; ++e) {
            r.dq[((n * d.L + l) * d.H + h) * d.E + e] += da * kv[((n * d.S + s) * d.H + h) * d.E + e];
            r.dk[((n * d.S + s) * d.H + h) * d.E + e] += da * qv[((n * d.L + l) * d.H + h) * d.E + e];
          }
        }
      }
  return r;
}

void check_forward(Rng& rng, const Dims& d, bool causal) {
  INFO("N " << d.N << " L " << d.L << " S " << d.S << " H " << d.H << " E " << d.E << " M " << d.M
            << std::string(causal ? " causal" : ""));
  Tensor q = rng.randn({d.N, d.L, d.H, d.E}), k = rng.randn({d.N, d.S, d.H, d.E}), v = rng.randn({d.N, d.S, d.H, d.M});
  Tensor probs = rng.randn({d.N, d.H, d.L, d.S}), out = rng.randn({d.N, d.L, d.H, d.M});
  softmax_attention_forward(q, k, v, Tensor(), causal, probs, out);
  Reference ref = reference_forward(q, k, v, d, causal);
  CHECK(rel_error(probs, ref.probs) < 1e-5);
  CHECK(rel_error(out, ref.out) < 1e-5);
}

void check_backward_analytic(Rng& rng, const Dims& d, bool causal) {
  INFO("N " << d.N << " L " << d.L << " S " << d.S << " H " << d.H << " E " << d.E << " M " << d.M
            << std::string(causal ? " causal" : ""));
  Tensor q = rng.randn({d.N, d.L, d.H, d.E}), k = rng.randn({d.N, d.S, d.H, d.E}), v = rng.randn({d.N, d.S, d.H, d.M});
  Tensor probs = Tensor::empty({d.N, d.H, d.L, d.S}), out = Tensor::empty({d.N, d.L, d.H, d.M});
  softmax_attention_forward(q, k, v, Tensor(), causal, probs, out);
  Tensor dout = rng.randn(out.shape());
  Tensor dq = rng.randn(q.shape()), dk = rng.randn(k.shape()), dv = rng.randn(v.shape());  // overwritten
  softmax_attention_backward(q, k, v, Tensor(), probs, dout, dq, dk, dv);
  Grads ref = reference_backward(q, k, v, dout, d, causal);
  CHECK(rel_error(dq, ref.dq) < 1e-5);
  CHECK(rel_error(dk, ref.dk) < 1e-5);
  CHECK(rel_error(dv, ref.dv) < 1e-5);
}

}  // namespace

TEST_CASE("softmax attention forward matches eq. 2 in float64") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  check_forward(rng, random_dims(rng, false), false);
}

TEST_CASE("causal softmax attention forward matches eq. 2 with the mask in float64") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  check_forward(rng, random_dims(rng, true), true);
}

TEST_CASE("softmax attention over several query blocks matches float64 forward and backward") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool causal : {false, true}) {
    Dims d{1, rng.integer(129, 300), 0, rng.integer(1, 2), rng.integer(1, 33), rng.integer(1, 33)};
    d.S = causal ? d.L : rng.integer(1, 300);
    check_forward(rng, d, causal);
    check_backward_analytic(rng, d, causal);
  }
}

TEST_CASE("softmax attention backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool causal : {false, true}) {
    const Dims d = random_dims(rng, causal, 7);
    INFO("N " << d.N << " L " << d.L << " S " << d.S << " H " << d.H << " E " << d.E << " M " << d.M
              << std::string(causal ? " causal" : ""));
    Tensor q = rng.randn({d.N, d.L, d.H, d.E}), k = rng.randn({d.N, d.S, d.H, d.E});
    Tensor v = rng.randn({d.N, d.S, d.H, d.M});
    Tensor probs = Tensor::empty({d.N, d.H, d.L, d.S}), out = Tensor::empty({d.N, d.L, d.H, d.M});
    std::vector<float> w = rng.normals(out.numel());
    auto loss = [&] {
      softmax_attention_forward(q, k, v, Tensor(), causal, probs, out);
      return dot(out, w);
    };
    loss();
    Tensor dout = Tensor::from_vector(w, out.shape());
    Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
    softmax_attention_backward(q, k, v, Tensor(), probs, dout, dq, dk, dv);
    CHECK(rel_error(dq, numeric_grad(q, loss)) < 1e-2);
    CHECK(rel_error(dk, numeric_grad(k, loss)) < 1e-2);
    CHECK(rel_error(dv, numeric_grad(v, loss)) < 1e-2);
    check_backward_analytic(rng, d, causal);
  }
}

TEST_CASE("softmax attention step with a KV cache reproduces causal attention at every position") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 3), T = rng.integer(1, 40), H = rng.integer(1, 4), E = rng.integer(1, 17),
                M = rng.integer(1, 17);
  INFO("N " << N << " T " << T << " H " << H << " E " << E << " M " << M);
  Tensor q = rng.randn({N, T, H, E}), k = rng.randn({N, T, H, E}), v = rng.randn({N, T, H, M});
  Tensor probs = Tensor::empty({N, H, T, T}), full = Tensor::empty({N, T, H, M});
  softmax_attention_forward(q, k, v, Tensor(), true, probs, full);

  // Garbage in the rows not yet written must not leak into the step.
  Tensor k_cache = rng.randn({N, T, H, E}, 100), v_cache = rng.randn({N, T, H, M}, 100);
  Tensor qt = Tensor::empty({N, H, E}), kt = Tensor::empty({N, H, E}), vt = Tensor::empty({N, H, M});
  Tensor out = Tensor::empty({N, H, M});
  auto qv = q.to_vector(), kv = k.to_vector(), vv = v.to_vector(), fv = full.to_vector();
  auto row = [&](const std::vector<float>& x, int64_t t, int64_t width) {
    std::vector<float> r(N * H * width);
    for (int64_t n = 0; n < N; ++n)
      std::copy_n(x.begin() + (n * T + t) * H * width, H * width, r.begin() + n * H * width);
    return r;
  };
  for (int64_t t = 0; t < T; ++t) {
    CAPTURE(t);
    qt.copy_from(Tensor::from_vector(row(qv, t, E), {N, H, E}));
    kt.copy_from(Tensor::from_vector(row(kv, t, E), {N, H, E}));
    vt.copy_from(Tensor::from_vector(row(vv, t, M), {N, H, M}));
    softmax_attention_step(qt, kt, vt, t, k_cache, v_cache, out);
    std::vector<float> want = row(fv, t, M);
    CHECK(rel_error(out, std::vector<double>(want.begin(), want.end())) < 1e-5);
  }
  CHECK(k_cache.to_vector() == kv);
  CHECK(v_cache.to_vector() == vv);
}

TEST_CASE("softmax attention rejects mismatched shapes with messages naming them") {
  Tensor q = Tensor::zeros({2, 5, 3, 4}), k = Tensor::zeros({2, 6, 3, 4}), v = Tensor::zeros({2, 6, 3, 7});
  Tensor probs = Tensor::zeros({2, 3, 5, 6}), out = Tensor::zeros({2, 5, 3, 7});
  CHECK_THROWS_WITH_AS(softmax_attention_forward(q, k, v, Tensor(), true, probs, out),
                       doctest::Contains("causal mask needs as many queries as keys, got queries [2, 5, 3, 4] and "
                                         "keys [2, 6, 3, 4]"),
                       lt::Error);
  Tensor k_bad = Tensor::zeros({2, 6, 3, 5});
  CHECK_THROWS_WITH_AS(softmax_attention_forward(q, k_bad, v, Tensor(), false, probs, out),
                       doctest::Contains("keys [2, 6, 3, 5] do not match queries [2, 5, 3, 4]"), lt::Error);
  Tensor v_bad = Tensor::zeros({2, 5, 3, 7});
  CHECK_THROWS_WITH_AS(softmax_attention_forward(q, k, v_bad, Tensor(), false, probs, out),
                       doctest::Contains("values [2, 5, 3, 7] do not match keys [2, 6, 3, 4]"), lt::Error);
  Tensor probs_bad = Tensor::zeros({2, 5, 3, 6});
  CHECK_THROWS_WITH_AS(softmax_attention_forward(q, k, v, Tensor(), false, probs_bad, out),
                       doctest::Contains("probs: expected shape [2, 3, 5, 6], got [2, 5, 3, 6]"), lt::Error);

  Tensor qt = Tensor::zeros({2, 3, 4}), vt = Tensor::zeros({2, 3, 7}), ot = Tensor::zeros({2, 3, 7});
  Tensor kc = Tensor::zeros({2, 8, 3, 4}), vc = Tensor::zeros({2, 8, 3, 7});
  CHECK_THROWS_WITH_AS(softmax_attention_step(qt, qt, vt, 8, kc, vc, ot),
                       doctest::Contains("step 8 is outside the cache of 8 rows [2, 8, 3, 4]"), lt::Error);
  Tensor vc_bad = Tensor::zeros({2, 9, 3, 7});
  CHECK_THROWS_WITH_AS(softmax_attention_step(qt, qt, vt, 0, kc, vc_bad, ot),
                       doctest::Contains("v_cache: expected shape [2, 8, 3, 7], got [2, 9, 3, 7]"), lt::Error);
}
