// Continuing a causal linear-attention state over a chunk in one parallel
// pass: against the recurrence (eq. 16-20) in float64 from a random state,
// chunk splits against one pass, prefill against the parallel form, the
// prefix state and the step, a bfloat16 state, and lengths (padding).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attention/attention.h"
#include "attention/linear_attention_inputs.h"
#include "backend/bf16.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

struct Dims {
  int64_t N, L, H, F, M;
  Shape qk() const { return {N, L, H, F}; }
  Shape vo() const { return {N, L, H, M}; }
  Shape S() const { return {N, H, F, M}; }
  Shape Z() const { return {N, H, F}; }
};

// Random dimensions with F != M (a feature map of its own width).
Dims random_dims(Rng& rng, int64_t L) {
  Dims d{rng.integer(1, 3), L, rng.integer(1, 3), rng.integer(2, 40), 0};
  do d.M = rng.integer(1, 40);
  while (d.M == d.F);
  return d;
}

struct Inputs {
  Tensor fq, fk, v;
};

Inputs random_inputs(Rng& rng, const Dims& d) {
  return {positive_features(rng, d.qk()), positive_features(rng, d.qk()), rng.randn(d.vo())};
}

// The recurrence of eq. 16-20 in float64 from the state (S, Z), over the first
// lengths[n] positions of each sequence; outputs of later positions stay zero.
struct Recurrence {
  std::vector<double> out, S, Z;
};

Recurrence reference(const Dims& d, const Inputs& in, std::vector<double> S, std::vector<double> Z,
                     const std::vector<int32_t>& lengths) {
  const std::vector<double> q = to_double(in.fq), k = to_double(in.fk), v = to_double(in.v);
  std::vector<double> out(d.N * d.L * d.H * d.M, 0.0);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h) {
      double* s = &S[(n * d.H + h) * d.F * d.M];
      double* z = &Z[(n * d.H + h) * d.F];
      for (int64_t t = 0; t < lengths[n]; ++t) {
        const double* qt = &q[((n * d.L + t) * d.H + h) * d.F];
        const double* kt = &k[((n * d.L + t) * d.H + h) * d.F];
        const double* vt = &v[((n * d.L + t) * d.H + h) * d.M];
        double den = kLinearAttentionEps;
        for (int64_t f = 0; f < d.F; ++f) {
          z[f] += kt[f];  // eq. 19
          den += qt[f] * z[f];
          for (int64_t m = 0; m < d.M; ++m) s[f * d.M + m] += kt[f] * vt[m];  // eq. 18
        }
        double* o = &out[((n * d.L + t) * d.H + h) * d.M];
        for (int64_t m = 0; m < d.M; ++m) {
          for (int64_t f = 0; f < d.F; ++f) o[m] += qt[f] * s[f * d.M + m];
          o[m] /= den;  // eq. 20
        }
      }
    }
  return {out, S, Z};
}

// Positions [t0, t1) of x [N, L, H, D] as a [N, t1 - t0, H, D] tensor.
Tensor positions(const Tensor& x, int64_t t0, int64_t t1) {
  const int64_t N = x.dim(0), L = x.dim(1), row = x.dim(2) * x.dim(3), T = t1 - t0;
  const std::vector<float> all = x.to_vector();
  std::vector<float> part(N * T * row);
  for (int64_t n = 0; n < N; ++n)
    std::copy(all.begin() + (n * L + t0) * row, all.begin() + (n * L + t1) * row, part.begin() + n * T * row);
  return Tensor::from_vector(part, {N, T, x.dim(2), x.dim(3)});
}

// Writes part [N, T, H, D] into positions [t0, t0 + T) of full [N, L, H, D].
void put_positions(std::vector<float>& full, int64_t L, const Tensor& part, int64_t t0) {
  const int64_t N = part.dim(0), T = part.dim(1), row = part.dim(2) * part.dim(3);
  const std::vector<float> p = part.to_vector();
  for (int64_t n = 0; n < N; ++n)
    std::copy(p.begin() + n * T * row, p.begin() + (n + 1) * T * row, full.begin() + (n * L + t0) * row);
}

// Chunk sizes summing to L: all ones, uneven random sizes, sizes around the
// CPU's 32-position chunk, and the whole sequence.
std::vector<std::vector<int64_t>> random_splits(Rng& rng, int64_t L) {
  std::vector<std::vector<int64_t>> splits(4);
  splits[0].assign(L, 1);
  for (int64_t left = L; left > 0;) {
    const int64_t c = std::min(left, rng.integer(1, std::max<int64_t>(1, L / 3)));
    splits[1].push_back(c);
    left -= c;
  }
  const int64_t around[] = {31, 1, 33, 64, 65, 2};
  for (int64_t left = L, i = 0; left > 0; ++i) {
    const int64_t c = std::min(left, around[i % 6]);
    splits[2].push_back(c);
    left -= c;
  }
  splits[3] = {L};
  return splits;
}

// Continues (S, Z) over the chunks of a split, one call each; returns all outputs.
Tensor continue_in_chunks(const Dims& d, const Inputs& in, const std::vector<int64_t>& split, Tensor& S, Tensor& Z) {
  std::vector<float> out(d.N * d.L * d.H * d.M);
  int64_t t0 = 0;
  for (int64_t c : split) {
    Tensor part = Tensor::empty({d.N, c, d.H, d.M});
    causal_linear_attention_continue(positions(in.fq, t0, t0 + c), positions(in.fk, t0, t0 + c),
                                     positions(in.v, t0, t0 + c), Tensor(), S, Z, part);
    put_positions(out, d.L, part, t0);
    t0 += c;
  }
  return Tensor::from_vector(out, d.vo());
}

std::vector<float> bf16_values(const Tensor& t) {
  std::vector<float> out(t.numel());
  for (size_t i = 0; i < out.size(); ++i) out[i] = bf16_to_float(t.data_bf16()[i]);
  return out;
}

Tensor random_bf16(Rng& rng, const Shape& shape) {
  Tensor t = Tensor::empty(shape, Device::cpu, DType::bf16);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_bf16()[i] = float_to_bf16(float(rng.normal()));
  return t;
}

std::vector<double> widened(const Tensor& bf16) {
  const std::vector<float> v = bf16_values(bf16);
  return std::vector<double>(v.begin(), v.end());
}

// The element n of x [N, ...] with its first `rows` positions along axis 1.
Tensor element(const Tensor& x, int64_t n, int64_t rows) {
  const int64_t per_row = x.dim(2) * x.dim(3);
  const std::vector<float> all = x.to_vector();
  auto begin = all.begin() + n * x.dim(1) * per_row;
  return Tensor::from_vector(std::vector<float>(begin, begin + rows * per_row), {1, rows, x.dim(2), x.dim(3)});
}

}  // namespace

TEST_CASE("continuing a state chunk by chunk equals the float64 recurrence from that state, for any split") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const Dims d = random_dims(rng, rng.integer(40, 150));
  INFO("N " << d.N << " L " << d.L << " H " << d.H << " F " << d.F << " M " << d.M);
  const Inputs in = random_inputs(rng, d);
  // A state already holding a prefix: S random, Z positive (a sum of phi(k)).
  const Tensor S0 = rng.randn(d.S()), Z0 = positive_features(rng, d.Z());
  const Recurrence want = reference(d, in, to_double(S0), to_double(Z0), std::vector<int32_t>(d.N, int32_t(d.L)));
  for (const std::vector<int64_t>& split : random_splits(rng, d.L)) {
    INFO("chunks " << split.size() << ", the first " << split[0]);
    Tensor S = S0.clone(), Z = Z0.clone();
    const Tensor out = continue_in_chunks(d, in, split, S, Z);
    CHECK(rel_error(out, want.out) < 1e-5);
    CHECK(rel_error(S, want.S) < 1e-5);
    CHECK(rel_error(Z, want.Z) < 1e-5);
  }
}

TEST_CASE("prefill by continuing a zero state equals the parallel form, the prefix state and the step") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const Dims d = random_dims(rng, rng.integer(1, 120));
  INFO("N " << d.N << " L " << d.L << " H " << d.H << " F " << d.F << " M " << d.M);
  const Inputs in = random_inputs(rng, d);
  Tensor S = Tensor::zeros(d.S()), Z = Tensor::zeros(d.Z()), out = Tensor::empty(d.vo());
  causal_linear_attention_continue(in.fq, in.fk, in.v, Tensor(), S, Z, out);

  Tensor parallel = Tensor::empty(d.vo());
  causal_linear_attention_forward(in.fq, in.fk, in.v, Tensor(), parallel);
  CHECK(rel_error(out, parallel) < 1e-5);
  Tensor S_prefix = Tensor::empty(d.S()), Z_prefix = Tensor::empty(d.Z());
  prefix_state(in.fk, in.v, S_prefix, Z_prefix);
  CHECK(rel_error(S, S_prefix) < 1e-5);
  CHECK(rel_error(Z, Z_prefix) < 1e-5);

  // The recurrent step, position by position, from zeros.
  Tensor S_step = Tensor::zeros(d.S()), Z_step = Tensor::zeros(d.Z());
  std::vector<float> stepped(out.numel());
  for (int64_t t = 0; t < d.L; ++t) {
    Tensor o = Tensor::empty({d.N, d.H, d.M});
    linear_attention_step(positions(in.fq, t, t + 1).reshape({d.N, d.H, d.F}),
                          positions(in.fk, t, t + 1).reshape({d.N, d.H, d.F}),
                          positions(in.v, t, t + 1).reshape({d.N, d.H, d.M}), S_step, Z_step, o);
    put_positions(stepped, d.L, o.reshape({d.N, 1, d.H, d.M}), t);
  }
  CHECK(rel_error(out, Tensor::from_vector(stepped, d.vo())) < 1e-5);
  CHECK(rel_error(S, S_step) < 1e-5);
  CHECK(rel_error(Z, Z_step) < 1e-5);
}

TEST_CASE("a bfloat16 state is widened once, summed in float32 and rounded once when stored") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const Dims d = random_dims(rng, rng.integer(1, 100));
  INFO("N " << d.N << " L " << d.L << " H " << d.H << " F " << d.F << " M " << d.M);
  const Inputs in = random_inputs(rng, d);
  Tensor S16 = random_bf16(rng, d.S());
  Tensor S32 = Tensor::from_vector(bf16_values(S16), d.S()), Z0 = positive_features(rng, d.Z());
  Tensor Z16 = Z0.clone(), Z32 = Z0.clone();
  const Recurrence want = reference(d, in, to_double(S32), to_double(Z0), std::vector<int32_t>(d.N, int32_t(d.L)));

  Tensor out16 = Tensor::empty(d.vo()), out32 = Tensor::empty(d.vo());
  causal_linear_attention_continue(in.fq, in.fk, in.v, Tensor(), S16, Z16, out16);
  causal_linear_attention_continue(in.fq, in.fk, in.v, Tensor(), S32, Z32, out32);
  // The same float32 arithmetic from the same (exactly widened) values ...
  CHECK(out16.to_vector() == out32.to_vector());
  CHECK(Z16.to_vector() == Z32.to_vector());
  // ... and one rounding of the float32 result at the end.
  const std::vector<float> s32 = S32.to_vector();
  std::vector<float> rounded(s32.size());
  for (size_t i = 0; i < s32.size(); ++i) rounded[i] = bf16_to_float(float_to_bf16(s32[i]));
  CHECK(bf16_values(S16) == rounded);
  // Against float64: output to fp32 accuracy, S within bf16 rounding (2^-9 relative per entry).
  CHECK(rel_error(out16, want.out) < 1e-5);
  CHECK(rel_error(bf16_values(S16), want.S) < 4e-3);
  CHECK(rel_error(Z16, want.Z) < 1e-5);
}

TEST_CASE("continue with lengths: padding is zero and the state is the unpadded prefix's") {
  for (DType state_type : {DType::f32, DType::bf16}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed << " state " << dtype_name(state_type));
    Rng rng(seed);
    Dims d = random_dims(rng, rng.integer(1, 100));
    d.N = rng.integer(2, 4);
    INFO("N " << d.N << " L " << d.L << " H " << d.H << " F " << d.F << " M " << d.M);
    Inputs in = random_inputs(rng, d);
    std::vector<int32_t> lengths(d.N);
    for (auto& len : lengths) len = int32_t(rng.integer(0, d.L));
    lengths[0] = 0;
    lengths[1] = int32_t(d.L);
    // Garbage in the padded positions must change nothing.
    std::vector<float> fk = in.fk.to_vector(), v = in.v.to_vector();
    for (int64_t n = 0; n < d.N; ++n)
      for (int64_t t = lengths[n]; t < d.L; ++t) {
        for (int64_t i = 0; i < d.H * d.F; ++i) fk[(n * d.L + t) * d.H * d.F + i] = float(rng.uniform(0, 1e3));
        for (int64_t i = 0; i < d.H * d.M; ++i) v[(n * d.L + t) * d.H * d.M + i] = float(rng.uniform(-1e3, 1e3));
      }
    in.fk = Tensor::from_vector(fk, d.qk());
    in.v = Tensor::from_vector(v, d.vo());

    const Tensor S0 = state_type == DType::f32 ? rng.randn(d.S()) : random_bf16(rng, d.S());
    const Tensor Z0 = positive_features(rng, d.Z());
    const std::vector<float> z0 = Z0.to_vector();
    Tensor S = S0.clone(), Z = Z0.clone(), out = rng.randn(d.vo());
    causal_linear_attention_continue(in.fq, in.fk, in.v, Tensor::from_vector(lengths, {d.N}), S, Z, out);
    const std::vector<double> S0d = state_type == DType::f32 ? to_double(S0) : widened(S0);
    const Recurrence want = reference(d, in, S0d, to_double(Z0), lengths);
    CHECK(rel_error(out, want.out) < 1e-5);  // padded rows of want are zeros ...
    const std::vector<float> o = out.to_vector();
    for (int64_t n = 0; n < d.N; ++n)  // ... and exactly zero here
      for (int64_t i = lengths[n] * d.H * d.M; i < d.L * d.H * d.M; ++i) REQUIRE(o[n * d.L * d.H * d.M + i] == 0.f);
    CHECK(rel_error(Z, want.Z) < 1e-5);
    if (state_type == DType::f32)
      CHECK(rel_error(S, want.S) < 1e-5);
    else
      CHECK(rel_error(bf16_values(S), want.S) < 4e-3);

    // Element by element: the same call on the unpadded prefix alone.
    const int64_t FM = d.F * d.M;
    for (int64_t n = 0; n < d.N; ++n) {
      CAPTURE(n);
      const int64_t len = lengths[n];
      Tensor Sn = Tensor::empty({1, d.H, d.F, d.M}, Device::cpu, state_type), Zn = Tensor::empty({1, d.H, d.F});
      std::memcpy(Sn.raw(), static_cast<const char*>(S0.raw()) + n * d.H * FM * dtype_size(state_type), Sn.nbytes());
      Zn.copy_from(Tensor::from_vector(std::vector<float>(z0.begin() + n * d.H * d.F, z0.begin() + (n + 1) * d.H * d.F),
                                       Zn.shape()));
      Tensor on = Tensor::empty({1, len, d.H, d.M});
      causal_linear_attention_continue(element(in.fq, n, len), element(in.fk, n, len), element(in.v, n, len),
                                       Tensor(), Sn, Zn, on);
      if (len > 0) CHECK(rel_error(element(out, n, len), on) < 1e-6);
      CHECK(std::memcmp(Sn.raw(), static_cast<const char*>(S.raw()) + n * d.H * FM * dtype_size(state_type),
                        Sn.nbytes()) == 0);
      CHECK(rel_error(Zn, std::vector<double>(want.Z.begin() + n * d.H * d.F, want.Z.begin() + (n + 1) * d.H * d.F)) <
            1e-6);
    }
  }
}

TEST_CASE("continue rejects bad state shapes and lengths with messages naming them") {
  Tensor q = Tensor::zeros({2, 5, 3, 4}), v = Tensor::zeros({2, 5, 3, 6}), out = Tensor::zeros({2, 5, 3, 6});
  Tensor S = Tensor::zeros({2, 3, 4, 6}), Z = Tensor::zeros({2, 3, 4});
  Tensor S_bad = Tensor::zeros({2, 3, 6, 4}), Z_bad = Tensor::zeros({2, 3, 6});
  CHECK_THROWS_WITH_AS(causal_linear_attention_continue(q, q, v, Tensor(), S_bad, Z, out),
                       doctest::Contains("state S: expected shape [2, 3, 4, 6], got [2, 3, 6, 4]"), lt::Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention_continue(q, q, v, Tensor(), S, Z_bad, out),
                       doctest::Contains("normaliser Z: expected shape [2, 3, 4], got [2, 3, 6]"), lt::Error);
  CHECK_THROWS_WITH_AS(
      causal_linear_attention_continue(q, q, v, Tensor::from_vector(std::vector<int32_t>{5, 6}, {2}), S, Z, out),
      doctest::Contains("lengths[1] = 6 is outside [0, 5]"), lt::Error);
  CHECK_THROWS_WITH_AS(causal_linear_attention_continue(q, q, v, Tensor::zeros({2}), S, Z, out),
                       doctest::Contains("lengths must be int32 [N] = [2], got float32 [2]"), lt::Error);
  Tensor S_int = Tensor::zeros({2, 3, 4, 6}, Device::cpu, DType::i32);
  CHECK_THROWS_WITH_AS(causal_linear_attention_continue(q, q, v, Tensor(), S_int, Z, out),
                       doctest::Contains("state S must be float32 or bfloat16, got int32"), lt::Error);
}
