// Softmax attention, eq. 2 of the paper: V' = softmax(Q K^T / sqrt(E)) V, the
// quadratic baseline. Per (batch, head) pair the products are sgemms on
// strided views (leading dimension H*E or H*M), so no head is ever copied out.
// Queries go in blocks of kRowBlock rows: with a causal mask a block only
// needs the keys up to its last row, which skips about half of the work, and
// the backward pass needs scratch for one block of dP rows, not all of them.
// Key lengths: only the first len keys are multiplied (and, in self-attention,
// only the first len query rows); the rest of probs and out is zeroed.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "attention/attention.h"
#include "attention/attention_dims.h"
#include "attention/head_loop.h"
#include "attention/lengths.h"
#include "backend/cpu_blas.h"
#include "backend/cpu_scratch.h"
#include "backend/dispatch.h"
#include "common/softmax_row.h"
#include "ops/simd_math.h"

namespace lt {
namespace {

constexpr int64_t kRowBlock = 128;

// row[0, valid) = softmax(row[0, valid)); row[valid, width) = 0 (masked keys).
void masked_softmax_row(float* row, int64_t valid, int64_t width) {
  if (valid == 0) {  // no key at all: the row attends to nothing
    std::fill(row, row + width, 0.f);
    return;
  }
  const float inv = 1.f / softmax_exp_row(row, row, valid, simd_math::OneLane{});
#pragma omp simd
  for (int64_t s = 0; s < valid; ++s) row[s] *= inv;
  std::fill(row + valid, row + width, 0.f);
}

// 1 + the last column of P [rows, width] that is non-zero in some row (at least 1).
int64_t nonzero_columns(const float* P, int64_t rows, int64_t width) {
  int64_t cols = 1;
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = P + i * width;
    int64_t c = width;
    while (c > cols && row[c - 1] == 0.f) --c;
    cols = c;
  }
  return cols;
}

AttentionDims checked_dims(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, const std::string& what) {
  AttentionDims d = attention_dims(q, k, v, what);
  check(d.S > 0, what + ": softmax attention needs at least one key, got keys " + shape_str(k.shape()));
  check(!causal || d.L == d.S, what + ": a causal mask needs as many queries as keys, got queries " +
                                   shape_str(q.shape()) + " and keys " + shape_str(k.shape()));
  return d;
}

void zero_head_rows(float* x, int64_t rows, int64_t width, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) std::memset(x + r * ld, 0, sizeof(float) * width);
}

// The real keys and query rows of batch element n: the first `keys` keys, and
// the first `rows` queries (all of them in cross-attention, L != S).
struct Extent {
  int64_t keys, rows;
};
Extent real_extent(const int32_t* lengths, int64_t n, const AttentionDims& d) {
  const int64_t keys = length_of(lengths, n, d.S);
  return {keys, d.L == d.S ? keys : d.L};
}

}  // namespace

void softmax_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_lengths,
                               bool causal, Tensor& probs, Tensor& out) {
  const std::string what = "softmax_attention_forward";
  const AttentionDims d = checked_dims(q, k, v, causal, what);
  check_shape(probs, {d.N, d.H, d.L, d.S}, "softmax_attention_forward probs");
  check_shape(out, attention_out_shape(d), "softmax_attention_forward out");
  Device dev = common_device({&q, &k, &v, &key_lengths, &probs, &out}, what.c_str());
  const int32_t* lengths = lengths_data(key_lengths, d.N, d.S, what + " key_lengths");
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::softmax_attention_forward(q.data(), k.data(), v.data(), lengths, probs.data(), out.data(), d.N,
                                               d.L, d.S, d.H, d.E, d.M, causal));

  const float temp = 1.f / std::sqrt(static_cast<float>(d.E));
  const int64_t HE = d.H * d.E, HM = d.H * d.M;
  const float *qp = q.data(), *kp = k.data(), *vp = v.data();
  float *pp = probs.data(), *op = out.data();
  const cpu::HeadLoop plan = cpu::plan_head_loop(d.N * d.H);
  cpu::for_each_head(plan, d.N * d.H, [&](int64_t nh, int) {
    const int64_t n = nh / d.H, h = nh % d.H;
    const Extent real = real_extent(lengths, n, d);
    const float* qh = qp + n * d.L * HE + h * d.E;
    const float* kh = kp + n * d.S * HE + h * d.E;
    const float* vh = vp + n * d.S * HM + h * d.M;
    float* oh = op + n * d.L * HM + h * d.M;
    for (int64_t l0 = 0; l0 < real.rows; l0 += kRowBlock) {
      const int64_t b = std::min(kRowBlock, real.rows - l0), keys = causal ? l0 + b : real.keys;
      float* P = pp + (nh * d.L + l0) * d.S;
      if (keys > 0) cpu::sgemm(false, true, b, keys, d.E, temp, qh + l0 * HE, HE, kh, HE, 0.f, P, d.S);
#pragma omp parallel for schedule(static) if (!plan.across_heads)
      for (int64_t i = 0; i < b; ++i) masked_softmax_row(P + i * d.S, causal ? l0 + i + 1 : real.keys, d.S);
      if (keys > 0)
        cpu::sgemm(false, false, b, d.M, keys, 1.f, P, d.S, vh, HM, 0.f, oh + l0 * HM, HM);
      else
        zero_head_rows(oh + l0 * HM, b, d.M, HM);
    }
    std::fill(pp + (nh * d.L + real.rows) * d.S, pp + (nh + 1) * d.L * d.S, 0.f);  // padded query rows
    zero_head_rows(oh + real.rows * HM, d.L - real.rows, d.M, HM);
  });
}

void softmax_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_lengths,
                                const Tensor& probs, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) {
  const std::string what = "softmax_attention_backward";
  const AttentionDims d = checked_dims(q, k, v, false, what);
  check_shape(probs, {d.N, d.H, d.L, d.S}, "softmax_attention_backward probs");
  check_shape(dout, attention_out_shape(d), "softmax_attention_backward dout");
  check_shape(dq, q.shape(), "softmax_attention_backward dq");
  check_shape(dk, k.shape(), "softmax_attention_backward dk");
  check_shape(dv, v.shape(), "softmax_attention_backward dv");
  Device dev = common_device({&q, &k, &v, &key_lengths, &probs, &dout, &dq, &dk, &dv}, what.c_str());
  const int32_t* lengths = lengths_data(key_lengths, d.N, d.S, what + " key_lengths");
  // On the GPU the masks are all in probs (below): zero rows and columns give
  // zero gradients without the lengths.
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::softmax_attention_backward(q.data(), k.data(), v.data(), probs.data(), dout.data(), dq.data(),
                                                dk.data(), dv.data(), d.N, d.L, d.S, d.H, d.E, d.M));

  // The causal mask is not an argument: a causal forward left probs exactly
  // zero above the diagonal, and keys whose probabilities are zero in every
  // row of a block add nothing to any gradient, so each block stops at its
  // last non-zero column (causal blocks then skip half the work, as in
  // forward). Padded query rows are skipped, their dq rows zeroed.
  const float temp = 1.f / std::sqrt(static_cast<float>(d.E));
  const int64_t HE = d.H * d.E, HM = d.H * d.M;
  const float *qp = q.data(), *kp = k.data(), *vp = v.data(), *pp = probs.data(), *gp = dout.data();
  float *dqp = dq.data(), *dkp = dk.data(), *dvp = dv.data();
  const cpu::HeadLoop plan = cpu::plan_head_loop(d.N * d.H);
  const int64_t per_worker = std::min(kRowBlock, std::max<int64_t>(d.L, 1)) * d.S;
  float* scratch_p = cpu::scratch(size_t(plan.workers * per_worker));
  cpu::for_each_head(plan, d.N * d.H, [&](int64_t nh, int worker) {
    const int64_t n = nh / d.H, h = nh % d.H;
    const Extent real = real_extent(lengths, n, d);
    const float* qh = qp + n * d.L * HE + h * d.E;
    const float* kh = kp + n * d.S * HE + h * d.E;
    const float* vh = vp + n * d.S * HM + h * d.M;
    const float* gh = gp + n * d.L * HM + h * d.M;
    float* dqh = dqp + n * d.L * HE + h * d.E;
    float* dkh = dkp + n * d.S * HE + h * d.E;
    float* dvh = dvp + n * d.S * HM + h * d.M;
    float* dP = scratch_p + worker * per_worker;
    zero_head_rows(dkh, d.S, d.E, HE);
    zero_head_rows(dvh, d.S, d.M, HM);
    zero_head_rows(dqh + real.rows * HE, d.L - real.rows, d.E, HE);
    for (int64_t l0 = 0; l0 < real.rows; l0 += kRowBlock) {
      const int64_t b = std::min(kRowBlock, real.rows - l0);
      const float* P = pp + (nh * d.L + l0) * d.S;
      const float* g = gh + l0 * HM;
      const int64_t keys = std::min(nonzero_columns(P, b, d.S), std::max<int64_t>(real.keys, 1));
      // dV += P^T dO;  dP = dO V^T;  dA = softmax'(dP);  dQ = t dA K;  dK += t dA^T Q.
      cpu::sgemm(true, false, keys, d.M, b, 1.f, P, d.S, g, HM, 1.f, dvh, HM);
      cpu::sgemm(false, true, b, keys, d.M, 1.f, g, HM, vh, HM, 0.f, dP, keys);
#pragma omp parallel for schedule(static) if (!plan.across_heads)
      for (int64_t i = 0; i < b; ++i)  // dP -> dA in place
        softmax_backward_row(P + i * d.S, dP + i * keys, dP + i * keys, keys, simd_math::OneLane{});
      cpu::sgemm(false, false, b, d.E, keys, temp, dP, keys, kh, HE, 0.f, dqh + l0 * HE, HE);
      cpu::sgemm(true, false, keys, d.E, b, temp, dP, keys, qh + l0 * HE, HE, 1.f, dkh, HE);
    }
  });
}

void softmax_attention_step(const Tensor& q, const Tensor& k, const Tensor& v, int64_t t, Tensor& k_cache,
                            Tensor& v_cache, Tensor& out) {
  const std::string what = "softmax_attention_step";
  check(q.ndim() == 3, what + ": queries must be [N, H, E], got " + shape_str(q.shape()));
  const int64_t N = q.dim(0), H = q.dim(1), E = q.dim(2);
  check_shape(k, q.shape(), "softmax_attention_step keys");
  check(v.ndim() == 3 && v.dim(0) == N && v.dim(1) == H,
        what + ": values " + shape_str(v.shape()) + " do not match queries " + shape_str(q.shape()) +
            " (expected [N, H, M])");
  const int64_t M = v.dim(2);
  check(k_cache.ndim() == 4 && k_cache.dim(0) == N && k_cache.dim(2) == H && k_cache.dim(3) == E,
        what + ": k_cache " + shape_str(k_cache.shape()) + " does not match queries " + shape_str(q.shape()) +
            " (expected [N, T, H, E])");
  const int64_t T = k_cache.dim(1);
  check_shape(v_cache, {N, T, H, M}, "softmax_attention_step v_cache");
  check_shape(out, {N, H, M}, "softmax_attention_step out");
  check(0 <= t && t < T, what + ": step " + std::to_string(t) + " is outside the cache of " + std::to_string(T) +
                             " rows " + shape_str(k_cache.shape()));
  Device dev = common_device({&q, &k, &v, &k_cache, &v_cache, &out}, what.c_str());
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::softmax_attention_step(q.data(), k.data(), v.data(), k_cache.data(), v_cache.data(), out.data(),
                                            N, T, H, E, M, t));

  const float temp = 1.f / std::sqrt(static_cast<float>(E));
  const int64_t HE = H * E, HM = H * M, keys = t + 1;
  float *kc = k_cache.data(), *vc = v_cache.data();
  for (int64_t n = 0; n < N; ++n) {
    std::memcpy(kc + (n * T + t) * HE, k.data() + n * HE, sizeof(float) * HE);
    std::memcpy(vc + (n * T + t) * HM, v.data() + n * HM, sizeof(float) * HM);
  }
  const float* qp = q.data();
  float* op = out.data();
  const cpu::HeadLoop plan = cpu::plan_head_loop(N * H);
  float* scores_p = cpu::scratch(size_t(plan.workers * keys));
  cpu::for_each_head(plan, N * H, [&](int64_t nh, int worker) {
    const int64_t n = nh / H, h = nh % H;
    float* s = scores_p + worker * keys;
    cpu::sgemm(false, true, 1, keys, E, temp, qp + nh * E, E, kc + n * T * HE + h * E, HE, 0.f, s, keys);
    masked_softmax_row(s, keys, keys);
    cpu::sgemm(false, false, 1, M, keys, 1.f, s, keys, vc + n * T * HM + h * M, HM, 0.f, op + nh * M, M);
  });
}

}  // namespace lt
