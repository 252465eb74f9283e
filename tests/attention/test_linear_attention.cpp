#include <cmath>

#include "attention/attention.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

struct Dims {
  int64_t N, L, S, H, F, M;
};

Dims random_dims(Rng& rng, int64_t max_len) {
  return {rng.integer(1, 3), rng.integer(1, max_len), rng.integer(1, max_len), rng.integer(1, 3),
          rng.integer(1, 17), rng.integer(1, 17)};
}

// Feature-mapped inputs are positive, as phi's outputs.
Tensor random_features(Rng& rng, const Shape& shape) {
  std::vector<float> x(shape_numel(shape));
  for (float& v : x) v = float(rng.uniform(0.05, 1.5));
  return Tensor::from_vector(x, shape);
}

struct Inputs {
  Tensor fq, fk, v;
};

Inputs random_inputs(Rng& rng, const Dims& d) {
  return {random_features(rng, {d.N, d.L, d.H, d.F}), random_features(rng, {d.N, d.S, d.H, d.F}),
          rng.randn({d.N, d.S, d.H, d.M})};
}

// The real query rows of element n: in self-attention (L == S) the padded
// queries l >= lengths[n] output zeros and get no gradient.
int64_t query_rows(const Dims& d, int64_t len) { return d.L == d.S ? len : d.L; }

// Eq. 4 in its quadratic form, float64: out_l = sum_s (fq_l.fk_s) v_s / (sum_s fq_l.fk_s + eps)
// over the keys s < lengths[n], zero for padded queries.
std::vector<double> reference(const Inputs& in, const Dims& d, const std::vector<int32_t>& lengths) {
  auto q = to_double(in.fq), k = to_double(in.fk), v = to_double(in.v);
  std::vector<double> out(d.N * d.L * d.H * d.M, 0.0);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t l = 0; l < query_rows(d, lengths[n]); ++l) {
        double* o = &out[((n * d.L + l) * d.H + h) * d.M];
        double den = 0;
        for (int64_t s = 0; s < lengths[n]; ++s) {
          double sim = 0;
          for (int64_t f = 0; f < d.F; ++f)
            sim += q[((n * d.L + l) * d.H + h) * d.F + f] * k[((n * d.S + s) * d.H + h) * d.F + f];
          den += sim;
          for (int64_t m = 0; m < d.M; ++m) o[m] += sim * v[((n * d.S + s) * d.H + h) * d.M + m];
        }
        for (int64_t m = 0; m < d.M; ++m) o[m] /= den + kLinearAttentionEps;
      }
  return out;
}

// Gradients of the quadratic form in float64: with a_ls = fq_l.fk_s and
// den_l = sum_s a_ls + eps, d loss / d a_ls = g_l.(v_s - out_l) / den_l.
struct Grads {
  std::vector<double> dfq, dfk, dv;
};

Grads reference_grads(const Inputs& in, const Tensor& dout, const Dims& d, const std::vector<int32_t>& lengths) {
  auto q = to_double(in.fq), k = to_double(in.fk), v = to_double(in.v), g = to_double(dout);
  const std::vector<double> out = reference(in, d, lengths);
  Grads r{std::vector<double>(q.size(), 0.0), std::vector<double>(k.size(), 0.0), std::vector<double>(v.size(), 0.0)};
  std::vector<double> a(d.S);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t l = 0; l < query_rows(d, lengths[n]); ++l) {
        const int64_t ql = ((n * d.L + l) * d.H + h), len = lengths[n];
        double den = kLinearAttentionEps;
        for (int64_t s = 0; s < len; ++s) {
          a[s] = 0;
          for (int64_t f = 0; f < d.F; ++f) a[s] += q[ql * d.F + f] * k[((n * d.S + s) * d.H + h) * d.F + f];
          den += a[s];
        }
        for (int64_t s = 0; s < len; ++s) {
          const int64_t ks = (n * d.S + s) * d.H + h;
          double b = 0;
          for (int64_t m = 0; m < d.M; ++m) {
            b += g[ql * d.M + m] * (v[ks * d.M + m] - out[ql * d.M + m]) / den;
            r.dv[ks * d.M + m] += a[s] * g[ql * d.M + m] / den;
          }
          for (int64_t f = 0; f < d.F; ++f) {
            r.dfq[ql * d.F + f] += b * k[ks * d.F + f];
            r.dfk[ks * d.F + f] += b * q[ql * d.F + f];
          }
        }
      }
  return r;
}

// Lengths in [0, S], the first at least min_first. One key (or F = 1) makes
// out independent of fq: the gradient tests then check only cancellation
// noise against a zero gradient, so they ask for min_first = 2 and no 1s.
std::vector<int32_t> random_lengths(Rng& rng, const Dims& d, int64_t min_first = 1, bool allow_one = true) {
  std::vector<int32_t> lengths(d.N);
  for (auto& len : lengths) {
    len = int32_t(rng.integer(0, d.S));
    if (len == 1 && !allow_one) len = 0;
  }
  lengths[0] = int32_t(rng.integer(min_first, d.S));
  return lengths;
}

struct Result {
  Tensor out, dfq, dfk, dv;
};

Result run(const Inputs& in, const Tensor& key_lengths, const Tensor& dout) {
  Result r{Tensor::empty(dout.shape()), Tensor::empty(in.fq.shape()), Tensor::empty(in.fk.shape()),
           Tensor::empty(in.v.shape())};
  linear_attention_forward(in.fq, in.fk, in.v, key_lengths, r.out);
  linear_attention_backward(in.fq, in.fk, in.v, key_lengths, dout, r.dfq, r.dfk, r.dv);
  return r;
}

// Batch element n of x [N, ...], its first `rows` rows along axis 1.
Tensor element(const Tensor& x, int64_t n, int64_t rows) {
  const int64_t per_row = x.dim(2) * x.dim(3);
  std::vector<float> all = x.to_vector();
  auto begin = all.begin() + n * x.dim(1) * per_row;
  return Tensor::from_vector(std::vector<float>(begin, begin + rows * per_row), {1, rows, x.dim(2), x.dim(3)});
}

}  // namespace

TEST_CASE("linear attention forward matches eq. 4 in quadratic form in float64") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool masked : {false, true}) {
    Dims d = random_dims(rng, 40);
    d.S = rng.integer(2, 40);
    d.F = rng.integer(2, 17);
    INFO("N " << d.N << " L " << d.L << " S " << d.S << " H " << d.H << " F " << d.F << " M " << d.M
              << std::string(masked ? " masked" : ""));
    Inputs in = random_inputs(rng, d);
    std::vector<int32_t> lengths = masked ? random_lengths(rng, d, 2, false) : std::vector<int32_t>(d.N, int32_t(d.S));
    Tensor key_lengths = masked ? Tensor::from_vector(lengths, {d.N}) : Tensor();
    Tensor out = rng.randn({d.N, d.L, d.H, d.M});
    linear_attention_forward(in.fq, in.fk, in.v, key_lengths, out);
    CHECK(rel_error(out, reference(in, d, lengths)) < 1e-5);
  }
}

TEST_CASE("linear attention backward matches the float64 gradients of the quadratic form") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool masked : {false, true}) {
    Dims d = random_dims(rng, 40);
    d.S = rng.integer(2, 40);
    d.F = rng.integer(2, 17);
    INFO("N " << d.N << " L " << d.L << " S " << d.S << " H " << d.H << " F " << d.F << " M " << d.M
              << std::string(masked ? " masked" : ""));
    Inputs in = random_inputs(rng, d);
    std::vector<int32_t> lengths = masked ? random_lengths(rng, d, 2, false) : std::vector<int32_t>(d.N, int32_t(d.S));
    Tensor key_lengths = masked ? Tensor::from_vector(lengths, {d.N}) : Tensor();
    Tensor dout = rng.randn({d.N, d.L, d.H, d.M});
    Result r = run(in, key_lengths, dout);
    Grads ref = reference_grads(in, dout, d, lengths);
    CHECK(rel_error(r.dfq, ref.dfq) < 1e-5);
    CHECK(rel_error(r.dfk, ref.dfk) < 1e-5);
    CHECK(rel_error(r.dv, ref.dv) < 1e-5);
  }
}

TEST_CASE("linear attention backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool masked : {false, true}) {
    Dims d = random_dims(rng, 7);
    d.S = rng.integer(2, 7);
    d.F = rng.integer(2, 9);
    INFO("N " << d.N << " L " << d.L << " S " << d.S << " H " << d.H << " F " << d.F << " M " << d.M
              << std::string(masked ? " masked" : ""));
    Inputs in = random_inputs(rng, d);
    Tensor key_lengths = masked ? Tensor::from_vector(random_lengths(rng, d, 2, false), {d.N}) : Tensor();
    Tensor out = Tensor::empty({d.N, d.L, d.H, d.M});
    std::vector<float> w = rng.normals(out.numel());
    auto loss = [&] {
      linear_attention_forward(in.fq, in.fk, in.v, key_lengths, out);
      return dot(out, w);
    };
    Result r = run(in, key_lengths, Tensor::from_vector(w, out.shape()));
    CHECK(rel_error(r.dfq, numeric_grad(in.fq, loss)) < 1e-2);
    CHECK(rel_error(r.dfk, numeric_grad(in.fk, loss)) < 1e-2);
    CHECK(rel_error(r.dv, numeric_grad(in.v, loss)) < 1e-2);
  }
}

TEST_CASE("linear attention key-length mask equals removing the padded keys") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const Dims d = random_dims(rng, 30);
  INFO("N " << d.N << " L " << d.L << " S " << d.S << " H " << d.H << " F " << d.F << " M " << d.M);
  Inputs in = random_inputs(rng, d);
  const std::vector<int32_t> lengths = random_lengths(rng, d);
  const Tensor key_lengths = Tensor::from_vector(lengths, {d.N});
  const Tensor dout = rng.randn({d.N, d.L, d.H, d.M});
  const Result masked = run(in, key_lengths, dout);

  for (int64_t n = 0; n < d.N; ++n) {
    const int64_t len = lengths[n];
    CAPTURE(n);
    CAPTURE(len);
    // Cross-attention on the kept keys (L queries against len keys) masks no query.
    const int64_t rows = d.L == d.S ? len : d.L;
    CAPTURE(rows);
    Inputs kept{element(in.fq, n, d.L), element(in.fk, n, len), element(in.v, n, len)};
    const Result alone = run(kept, Tensor(), element(dout, n, d.L));
    if (rows > 0) {
      CHECK(rel_error(element(masked.out, n, rows), element(alone.out, 0, rows)) < 1e-6);
      CHECK(rel_error(element(masked.dfq, n, rows), element(alone.dfq, 0, rows)) < 1e-6);
    }
    if (len > 0 && rows == d.L) {  // with padded queries removed too, see the self-attention test
      CHECK(rel_error(element(masked.dfk, n, len), alone.dfk) < 1e-6);
      CHECK(rel_error(element(masked.dv, n, len), alone.dv) < 1e-6);
    }
    // Padded queries output zeros and get exactly zero gradient.
    const std::vector<float> out = element(masked.out, n, d.L).to_vector(), dfq = element(masked.dfq, n, d.L).to_vector();
    for (size_t i = rows * d.H * d.M; i < out.size(); ++i) REQUIRE(out[i] == 0.f);
    for (size_t i = rows * d.H * d.F; i < dfq.size(); ++i) REQUIRE(dfq[i] == 0.f);
    // Padded keys get exactly zero gradient.
    const std::vector<float> dfk = element(masked.dfk, n, d.S).to_vector(), dv = element(masked.dv, n, d.S).to_vector();
    for (size_t i = len * d.H * d.F; i < dfk.size(); ++i) REQUIRE(dfk[i] == 0.f);
    for (size_t i = len * d.H * d.M; i < dv.size(); ++i) REQUIRE(dv[i] == 0.f);
  }

  // Garbage in the padded keys and values changes nothing.
  std::vector<float> fk = in.fk.to_vector(), v = in.v.to_vector();
  for (int64_t n = 0; n < d.N; ++n) {
    for (int64_t i = lengths[n] * d.H * d.F; i < d.S * d.H * d.F; ++i) fk[n * d.S * d.H * d.F + i] = float(rng.uniform(-1e3, 1e3));
    for (int64_t i = lengths[n] * d.H * d.M; i < d.S * d.H * d.M; ++i) v[n * d.S * d.H * d.M + i] = float(rng.uniform(-1e3, 1e3));
  }
  Inputs garbage{in.fq, Tensor::from_vector(fk, in.fk.shape()), Tensor::from_vector(v, in.v.shape())};
  const Result again = run(garbage, key_lengths, dout);
  CHECK(again.out.to_vector() == masked.out.to_vector());
  CHECK(again.dfq.to_vector() == masked.dfq.to_vector());
  CHECK(again.dfk.to_vector() == masked.dfk.to_vector());
  CHECK(again.dv.to_vector() == masked.dv.to_vector());
}

TEST_CASE("linear attention rejects bad key lengths and mismatched shapes") {
  Tensor fq = Tensor::zeros({2, 5, 3, 4}), fk = Tensor::zeros({2, 6, 3, 4}), v = Tensor::zeros({2, 6, 3, 7});
  Tensor out = Tensor::zeros({2, 5, 3, 7});
  CHECK_THROWS_WITH_AS(linear_attention_forward(fq, fk, v, Tensor::from_vector(std::vector<int32_t>{3, 7}, {2}), out),
                       doctest::Contains("key_lengths[1] = 7 is outside [0, 6]"), lt::Error);
  CHECK_THROWS_WITH_AS(linear_attention_forward(fq, fk, v, Tensor::from_vector(std::vector<int32_t>{-1, 2}, {2}), out),
                       doctest::Contains("key_lengths[0] = -1 is outside [0, 6]"), lt::Error);
  CHECK_THROWS_WITH_AS(linear_attention_forward(fq, fk, v, Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3}), out),
                       doctest::Contains("key_lengths must be int32 [N] = [2], got int32 [3]"), lt::Error);
  CHECK_THROWS_WITH_AS(linear_attention_forward(fq, fk, v, Tensor::zeros({2}), out),
                       doctest::Contains("key_lengths must be int32 [N] = [2], got float32 [2]"), lt::Error);
  Tensor fk_bad = Tensor::zeros({2, 6, 3, 5});
  CHECK_THROWS_WITH_AS(linear_attention_forward(fq, fk_bad, v, Tensor(), out),
                       doctest::Contains("keys [2, 6, 3, 5] do not match queries [2, 5, 3, 4]"), lt::Error);
  Tensor out_bad = Tensor::zeros({2, 5, 3, 6});
  CHECK_THROWS_WITH_AS(linear_attention_forward(fq, fk, v, Tensor(), out_bad),
                       doctest::Contains("out: expected shape [2, 5, 3, 7], got [2, 5, 3, 6]"), lt::Error);
  Tensor dfk_bad = Tensor::zeros({2, 5, 3, 4});
  CHECK_THROWS_WITH_AS(linear_attention_backward(fq, fk, v, Tensor(), out, fq, dfk_bad, v),
                       doctest::Contains("dfk: expected shape [2, 6, 3, 4], got [2, 5, 3, 4]"), lt::Error);
}
