#include "attention/attention.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

Tensor gpu(const Tensor& t) { return t.to(Device::cuda); }

Tensor positive(Rng& rng, const Shape& shape) {
  std::vector<float> x(shape_numel(shape));
  for (float& v : x) v = float(rng.uniform(0.05, 1.5));
  return Tensor::from_vector(x, shape);
}

}  // namespace

TEST_CASE("cuda softmax attention forward and backward match the CPU") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool causal : {false, true}) {
    const int64_t N = rng.integer(1, 3), L = rng.integer(1, 200), H = rng.integer(1, 4), E = rng.integer(1, 65),
                  M = rng.integer(1, 65), S = causal ? L : rng.integer(1, 200);
    INFO("N " << N << " L " << L << " S " << S << " H " << H << " E " << E << " M " << M << std::string(causal ? " causal" : ""));
    Tensor q = rng.randn({N, L, H, E}), k = rng.randn({N, S, H, E}), v = rng.randn({N, S, H, M});
    Tensor dout = rng.randn({N, L, H, M});
    Tensor probs = Tensor::empty({N, H, L, S}), out = Tensor::empty({N, L, H, M});
    Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
    softmax_attention_forward(q, k, v, Tensor(), causal, probs, out);
    softmax_attention_backward(q, k, v, Tensor(), probs, dout, dq, dk, dv);

    Tensor gq = gpu(q), gk = gpu(k), gv = gpu(v);
    Tensor gprobs = Tensor::empty(probs.shape(), Device::cuda), gout = Tensor::empty(out.shape(), Device::cuda);
    Tensor gdq = Tensor::empty(q.shape(), Device::cuda), gdk = Tensor::empty(k.shape(), Device::cuda),
           gdv = Tensor::empty(v.shape(), Device::cuda);
    softmax_attention_forward(gq, gk, gv, Tensor(), causal, gprobs, gout);
    softmax_attention_backward(gq, gk, gv, Tensor(), gprobs, gpu(dout), gdq, gdk, gdv);
    CHECK(rel_error(gprobs, probs) < 1e-5);
    CHECK(rel_error(gout, out) < 1e-5);
    CHECK(rel_error(gdq, dq) < 1e-5);
    CHECK(rel_error(gdk, dk) < 1e-5);
    CHECK(rel_error(gdv, dv) < 1e-5);
  }
}

TEST_CASE("cuda softmax attention step matches the CPU at every position") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 3), T = rng.integer(1, 300), H = rng.integer(1, 4), E = rng.integer(1, 65),
                M = rng.integer(1, 65);
  INFO("N " << N << " T " << T << " H " << H << " E " << E << " M " << M);
  Tensor k_cache = rng.randn({N, T, H, E}), v_cache = rng.randn({N, T, H, M});
  Tensor gk_cache = gpu(k_cache), gv_cache = gpu(v_cache);
  Tensor out = Tensor::empty({N, H, M}), gout = Tensor::empty({N, H, M}, Device::cuda);
  for (int64_t t = 0; t < T; ++t) {
    CAPTURE(t);
    Tensor q = rng.randn({N, H, E}), k = rng.randn({N, H, E}), v = rng.randn({N, H, M});
    softmax_attention_step(q, k, v, t, k_cache, v_cache, out);
    softmax_attention_step(gpu(q), gpu(k), gpu(v), t, gk_cache, gv_cache, gout);
    REQUIRE(rel_error(gout, out) < 1e-5);
  }
  CHECK(gk_cache.to_vector() == k_cache.to_vector());
  CHECK(gv_cache.to_vector() == v_cache.to_vector());
}

TEST_CASE("cuda linear attention forward and backward match the CPU with and without a key mask") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (bool masked : {false, true}) {
    // One feature or one key makes the output independent of phi(q)'s
    // scale: dphi(q) is then eps-sized, the rounding of two cancelling terms
    // (3.7e-2 apart on an H100 at F = 1), and no test of the kernels.
    const int64_t N = rng.integer(1, 4), L = rng.integer(1, 300), S = rng.integer(2, 300), H = rng.integer(1, 4),
                  F = rng.integer(2, 65), M = rng.integer(1, 65);
    INFO("N " << N << " L " << L << " S " << S << " H " << H << " F " << F << " M " << M << std::string(masked ? " masked" : ""));
    Tensor fq = positive(rng, {N, L, H, F}), fk = positive(rng, {N, S, H, F}), v = rng.randn({N, S, H, M});
    Tensor dout = rng.randn({N, L, H, M}), key_lengths;
    if (masked) {
      std::vector<int32_t> lengths(N);
      for (auto& len : lengths) len = rng.integer(0, 3) == 0 ? 0 : int32_t(rng.integer(2, S));  // empty, or 2 keys or more
      key_lengths = Tensor::from_vector(lengths, {N});
    }
    Tensor out = Tensor::empty({N, L, H, M});
    Tensor dfq = Tensor::empty(fq.shape()), dfk = Tensor::empty(fk.shape()), dv = Tensor::empty(v.shape());
    linear_attention_forward(fq, fk, v, key_lengths, out);
    linear_attention_backward(fq, fk, v, key_lengths, dout, dfq, dfk, dv);

    Tensor gfq = gpu(fq), gfk = gpu(fk), gv = gpu(v), glen = masked ? gpu(key_lengths) : Tensor();
    Tensor gout = Tensor::empty(out.shape(), Device::cuda);
    Tensor gdfq = Tensor::empty(fq.shape(), Device::cuda), gdfk = Tensor::empty(fk.shape(), Device::cuda),
           gdv = Tensor::empty(v.shape(), Device::cuda);
    linear_attention_forward(gfq, gfk, gv, glen, gout);
    linear_attention_backward(gfq, gfk, gv, glen, gpu(dout), gdfq, gdfk, gdv);
    CHECK(rel_error(gout, out) < 1e-5);
    CHECK(rel_error(gdfq, dfq) < 1e-5);
    CHECK(rel_error(gdfk, dfk) < 1e-5);
    CHECK(rel_error(gdv, dv) < 1e-5);
  }
}

namespace {

// Random lengths in [0, limit], one full and (for N > 2) one empty.
Tensor random_lengths(Rng& rng, int64_t N, int64_t limit) {
  std::vector<int32_t> lengths(N);
  for (auto& len : lengths) len = int32_t(rng.integer(0, limit));
  lengths[0] = int32_t(limit);
  if (N > 2) lengths[N - 1] = 0;
  return Tensor::from_vector(lengths, {N});
}

}  // namespace

TEST_CASE("cuda softmax attention with key lengths matches the CPU (self-attention, causal or not, and cross)") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int kind = 0; kind < 3; ++kind) {  // 0: self, 1: causal self, 2: cross-attention (L != S)
    const bool causal = kind == 1;
    const int64_t N = rng.integer(2, 4), L = rng.integer(2, 200), H = rng.integer(1, 4), E = rng.integer(1, 65),
                  M = rng.integer(1, 65), S = kind == 2 ? L + rng.integer(1, 50) : L;
    INFO("kind " << kind << " N " << N << " L " << L << " S " << S << " H " << H << " E " << E << " M " << M);
    const Tensor lengths = random_lengths(rng, N, S);
    Tensor q = rng.randn({N, L, H, E}), k = rng.randn({N, S, H, E}), v = rng.randn({N, S, H, M});
    Tensor dout = rng.randn({N, L, H, M});
    Tensor probs = Tensor::empty({N, H, L, S}), out = Tensor::empty({N, L, H, M});
    Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
    softmax_attention_forward(q, k, v, lengths, causal, probs, out);
    softmax_attention_backward(q, k, v, lengths, probs, dout, dq, dk, dv);

    Tensor gq = gpu(q), gk = gpu(k), gv = gpu(v), glen = gpu(lengths);
    Tensor gprobs = Tensor::empty(probs.shape(), Device::cuda), gout = Tensor::empty(out.shape(), Device::cuda);
    Tensor gdq = Tensor::empty(q.shape(), Device::cuda), gdk = Tensor::empty(k.shape(), Device::cuda),
           gdv = Tensor::empty(v.shape(), Device::cuda);
    softmax_attention_forward(gq, gk, gv, glen, causal, gprobs, gout);
    softmax_attention_backward(gq, gk, gv, glen, gprobs, gpu(dout), gdq, gdk, gdv);
    CHECK(rel_error(gprobs, probs) < 1e-5);
    // The masks are exact zeros on both devices.
    const std::vector<float> gp = gprobs.to_vector(), cp = probs.to_vector();
    for (size_t i = 0; i < cp.size(); ++i)
      if (cp[i] == 0.f) REQUIRE(gp[i] == 0.f);
    CHECK(rel_error(gout, out) < 1e-5);
    CHECK(rel_error(gdq, dq) < 1e-5);
    CHECK(rel_error(gdk, dk) < 1e-5);
    CHECK(rel_error(gdv, dv) < 1e-5);
  }
}

TEST_CASE("cuda linear self-attention with key lengths matches the CPU, padded queries included") {
  if (!cuda_or_skip()) return;
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(2, 4), L = rng.integer(2, 300), H = rng.integer(1, 4), F = rng.integer(1, 65),
                M = rng.integer(1, 65);
  INFO("N " << N << " L " << L << " H " << H << " F " << F << " M " << M);
  const Tensor lengths = random_lengths(rng, N, L);
  Tensor fq = positive(rng, {N, L, H, F}), fk = positive(rng, {N, L, H, F}), v = rng.randn({N, L, H, M});
  Tensor dout = rng.randn({N, L, H, M});
  Tensor out = Tensor::empty({N, L, H, M});
  Tensor dfq = Tensor::empty(fq.shape()), dfk = Tensor::empty(fk.shape()), dv = Tensor::empty(v.shape());
  linear_attention_forward(fq, fk, v, lengths, out);
  linear_attention_backward(fq, fk, v, lengths, dout, dfq, dfk, dv);

  Tensor gout = Tensor::empty(out.shape(), Device::cuda);
  Tensor gdfq = Tensor::empty(fq.shape(), Device::cuda), gdfk = Tensor::empty(fk.shape(), Device::cuda),
         gdv = Tensor::empty(v.shape(), Device::cuda);
  linear_attention_forward(gpu(fq), gpu(fk), gpu(v), gpu(lengths), gout);
  linear_attention_backward(gpu(fq), gpu(fk), gpu(v), gpu(lengths), gpu(dout), gdfq, gdfk, gdv);
  CHECK(rel_error(gout, out) < 1e-5);
  CHECK(rel_error(gdfq, dfq) < 1e-5);
  CHECK(rel_error(gdfk, dfk) < 1e-5);
  CHECK(rel_error(gdv, dv) < 1e-5);
  const std::vector<int32_t> len = lengths.to_vector_i32();
  const std::vector<float> o = gout.to_vector(), g = gdfq.to_vector();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = len[n] * H * M; i < L * H * M; ++i) REQUIRE(o[n * L * H * M + i] == 0.f);
    for (int64_t i = len[n] * H * F; i < L * H * F; ++i) REQUIRE(g[n * L * H * F + i] == 0.f);
  }
}
