// Length masks of the training forms (padded batches): for causal linear
// attention, softmax attention (causal, not, and cross-attention) and
// non-causal linear attention, the real positions of a padded sequence
// compute what the same call computes on the unpadded sequence alone, in
// outputs and in gradients; padded outputs, probabilities and gradients are
// exactly zero, whatever garbage the padded inputs hold.
#include <cmath>
#include <vector>

#include "attention/attention.h"
#include "attention/linear_attention_inputs.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// x [N, L, H, D] with positions t >= lengths[n] overwritten by uniforms in [lo, hi].
Tensor with_garbage(Rng& rng, const Tensor& x, const std::vector<int32_t>& lengths, double lo, double hi) {
  std::vector<float> v = x.to_vector();
  const int64_t L = x.dim(1), row = x.dim(2) * x.dim(3);
  for (size_t n = 0; n < lengths.size(); ++n)
    for (int64_t i = lengths[n] * row; i < L * row; ++i) v[n * L * row + i] = float(rng.uniform(lo, hi));
  return Tensor::from_vector(v, x.shape());
}

// Random lengths in [0, L] for N >= 2 sequences: one full, one empty when N > 2.
std::vector<int32_t> random_lengths(Rng& rng, int64_t N, int64_t L) {
  std::vector<int32_t> lengths(N);
  for (auto& len : lengths) len = int32_t(rng.integer(1, L));
  lengths[0] = int32_t(L);
  if (N > 2) lengths[N - 1] = 0;
  return lengths;
}

// Element n of x [N, L, ...] with its first `rows` positions along axis 1.
Tensor element(const Tensor& x, int64_t n, int64_t rows) {
  const int64_t per_row = x.dim(2) * x.dim(3);
  const std::vector<float> all = x.to_vector();
  auto begin = all.begin() + n * x.dim(1) * per_row;
  return Tensor::from_vector(std::vector<float>(begin, begin + rows * per_row), {1, rows, x.dim(2), x.dim(3)});
}

// Element n of the padded call's x [N, L, ...]: its first `rows` positions
// equal the unpadded call's `alone`, the others are exactly zero.
void check_element(const char* what, const Tensor& x, int64_t n, int64_t rows, const Tensor& alone) {
  INFO(what);
  if (rows > 0) CHECK(rel_error(element(x, n, rows), alone) < 1e-6);
  const std::vector<float> all = element(x, n, x.dim(1)).to_vector();
  for (size_t i = rows * x.dim(2) * x.dim(3); i < all.size(); ++i) REQUIRE(all[i] == 0.f);
}

struct Grads {
  Tensor out, dq, dk, dv, probs;
};

Grads empty_like(const Tensor& q, const Tensor& k, const Tensor& v, int64_t L) {
  return {Tensor::empty({q.dim(0), L, q.dim(2), v.dim(3)}), Tensor::empty(q.shape()), Tensor::empty(k.shape()),
          Tensor::empty(v.shape()), Tensor::empty({q.dim(0), q.dim(2), L, k.dim(1)})};
}

Grads causal_linear(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, const Tensor& dout) {
  Grads g = empty_like(q, k, v, q.dim(1));
  causal_linear_attention_forward(q, k, v, lengths, g.out);
  causal_linear_attention_backward(q, k, v, lengths, dout, g.dq, g.dk, g.dv);
  return g;
}

Grads softmax(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, bool causal,
              const Tensor& dout) {
  Grads g = empty_like(q, k, v, q.dim(1));
  softmax_attention_forward(q, k, v, lengths, causal, g.probs, g.out);
  softmax_attention_backward(q, k, v, lengths, g.probs, dout, g.dq, g.dk, g.dv);
  return g;
}

Grads linear(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lengths, const Tensor& dout) {
  Grads g = empty_like(q, k, v, q.dim(1));
  linear_attention_forward(q, k, v, lengths, g.out);
  linear_attention_backward(q, k, v, lengths, dout, g.dq, g.dk, g.dv);
  return g;
}

// probs [N, H, L, S] of element n: rows < rows and keys < keys equal the
// unpadded call's probs [1, H, rows, keys]; every other entry is zero.
void check_probs(const Tensor& probs, int64_t n, int64_t rows, int64_t keys, const Tensor& alone) {
  const int64_t H = probs.dim(1), L = probs.dim(2), S = probs.dim(3);
  const std::vector<float> p = probs.to_vector();
  std::vector<float> kept;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t s = 0; s < S; ++s) {
        const float x = p[((n * H + h) * L + l) * S + s];
        if (l < rows && s < keys)
          kept.push_back(x);
        else
          REQUIRE(x == 0.f);
      }
  if (!kept.empty()) CHECK(rel_error(kept, to_double(alone)) < 1e-6);
}

}  // namespace

TEST_CASE("causal linear attention with lengths: real positions as unpadded, padding zero in outputs and gradients") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(2, 4), L = rng.integer(2, 150), H = rng.integer(1, 3), F = rng.integer(2, 40),
                M = rng.integer(1, 40);
  INFO("N " << N << " L " << L << " H " << H << " F " << F << " M " << M);
  const std::vector<int32_t> lengths = random_lengths(rng, N, L);
  const Tensor q = with_garbage(rng, positive_features(rng, {N, L, H, F}), lengths, 0, 1e3);
  const Tensor k = with_garbage(rng, positive_features(rng, {N, L, H, F}), lengths, 0, 1e3);
  const Tensor v = with_garbage(rng, rng.randn({N, L, H, M}), lengths, -1e3, 1e3);
  const Tensor dout = rng.randn({N, L, H, M});
  const Grads padded = causal_linear(q, k, v, Tensor::from_vector(lengths, {N}), dout);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = lengths[n];
    CAPTURE(n);
    CAPTURE(len);
    Grads alone;
    if (len > 0)
      alone = causal_linear(element(q, n, len), element(k, n, len), element(v, n, len), Tensor(),
                            element(dout, n, len));
    check_element("out", padded.out, n, len, alone.out);
    check_element("dfq", padded.dq, n, len, alone.dq);
    check_element("dfk", padded.dk, n, len, alone.dk);
    check_element("dv", padded.dv, n, len, alone.dv);
  }
}

TEST_CASE("softmax self-attention with key lengths: real rows and keys as unpadded, padding zero") {
  for (bool causal : {false, true}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed << (causal ? " causal" : ""));
    Rng rng(seed);
    // L up to 300: several 128-row query blocks.
    const int64_t N = rng.integer(2, 4), L = rng.integer(2, 300), H = rng.integer(1, 3), E = rng.integer(1, 20),
                  M = rng.integer(1, 20);
    INFO("N " << N << " L " << L << " H " << H << " E " << E << " M " << M);
    const std::vector<int32_t> lengths = random_lengths(rng, N, L);
    const Tensor q = with_garbage(rng, rng.randn({N, L, H, E}), lengths, -1e3, 1e3);
    const Tensor k = with_garbage(rng, rng.randn({N, L, H, E}), lengths, -1e3, 1e3);
    const Tensor v = with_garbage(rng, rng.randn({N, L, H, M}), lengths, -1e3, 1e3);
    const Tensor dout = rng.randn({N, L, H, M});
    const Grads padded = softmax(q, k, v, Tensor::from_vector(lengths, {N}), causal, dout);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t len = lengths[n];
      CAPTURE(n);
      CAPTURE(len);
      Grads alone;
      if (len > 0)
        alone = softmax(element(q, n, len), element(k, n, len), element(v, n, len), Tensor(), causal,
                        element(dout, n, len));
      check_probs(padded.probs, n, len, len, alone.probs);
      check_element("out", padded.out, n, len, alone.out);
      check_element("dq", padded.dq, n, len, alone.dq);
      check_element("dk", padded.dk, n, len, alone.dk);
      check_element("dv", padded.dv, n, len, alone.dv);
    }
  }
}

TEST_CASE("softmax cross-attention with key lengths masks keys only") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(2, 4), L = rng.integer(1, 40), H = rng.integer(1, 3), E = rng.integer(1, 20),
                M = rng.integer(1, 20);
  int64_t S = rng.integer(2, 40);
  if (S == L) ++S;
  INFO("N " << N << " L " << L << " S " << S << " H " << H << " E " << E << " M " << M);
  const std::vector<int32_t> lengths = random_lengths(rng, N, S);
  const Tensor q = rng.randn({N, L, H, E});
  const Tensor k = with_garbage(rng, rng.randn({N, S, H, E}), lengths, -1e3, 1e3);
  const Tensor v = with_garbage(rng, rng.randn({N, S, H, M}), lengths, -1e3, 1e3);
  const Tensor dout = rng.randn({N, L, H, M});
  const Grads padded = softmax(q, k, v, Tensor::from_vector(lengths, {N}), false, dout);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = lengths[n];
    CAPTURE(n);
    CAPTURE(len);
    Grads alone;
    if (len > 0)
      alone = softmax(element(q, n, L), element(k, n, len), element(v, n, len), Tensor(), false, element(dout, n, L));
    const int64_t rows = len > 0 ? L : 0;  // no key at all: nothing to attend to, zero outputs and dq
    check_probs(padded.probs, n, rows, len, alone.probs);
    check_element("out", padded.out, n, rows, alone.out);
    check_element("dq", padded.dq, n, rows, alone.dq);
    check_element("dk", padded.dk, n, len, alone.dk);
    check_element("dv", padded.dv, n, len, alone.dv);
  }
}

TEST_CASE("non-causal linear self-attention with key lengths: padded queries output zeros, get no gradient") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(2, 4), L = rng.integer(2, 60), H = rng.integer(1, 3), F = rng.integer(2, 20),
                M = rng.integer(1, 20);
  INFO("N " << N << " L " << L << " H " << H << " F " << F << " M " << M);
  const std::vector<int32_t> lengths = random_lengths(rng, N, L);
  const Tensor q = with_garbage(rng, positive_features(rng, {N, L, H, F}), lengths, 0, 1e3);
  const Tensor k = with_garbage(rng, positive_features(rng, {N, L, H, F}), lengths, 0, 1e3);
  const Tensor v = with_garbage(rng, rng.randn({N, L, H, M}), lengths, -1e3, 1e3);
  const Tensor dout = rng.randn({N, L, H, M});
  const Grads padded = linear(q, k, v, Tensor::from_vector(lengths, {N}), dout);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = lengths[n];
    CAPTURE(n);
    CAPTURE(len);
    Grads alone;
    if (len > 0)
      alone = linear(element(q, n, len), element(k, n, len), element(v, n, len), Tensor(), element(dout, n, len));
    check_element("out", padded.out, n, len, alone.out);
    check_element("dfq", padded.dq, n, len, alone.dq);
    check_element("dfk", padded.dk, n, len, alone.dk);
    check_element("dv", padded.dv, n, len, alone.dv);
  }
}
