// Non-causal linear attention, eq. 4-6: with A = sum_s phi(k_s) v_s^T [F, M]
// and z = sum_s phi(k_s) [F] (the sums over the first key_lengths[n] keys),
// out_l = A^T phi(q_l) / (phi(q_l) . z + eps). Per (batch, head) pair that is
// two sgemms, O((L + S) F M) instead of the O(L S) of eq. 2.
//
// Backward, with G_l = dout_l / den_l and c_l = -(G_l . num_l) / den_l
// (num_l = A^T phi(q_l), den_l = phi(q_l) . z + eps):
//   dphi(q_l) = A G_l + c_l z,   dA = sum_l phi(q_l) G_l^T,   dz = sum_l c_l phi(q_l),
//   dphi(k_s) = dA v_s + dz,     dv_s = dA^T phi(k_s)          (s < key_lengths[n]; else 0).
// A and z are recomputed rather than saved, so memory stays O(L + S): the
// scratch per head is G [L, M], c [L], and A, dA, z, dz.
// In self-attention (L == S) the queries l >= key_lengths[n] are padding too:
// the products run over the first `rows` queries only, the other rows of out,
// dphi(q) are zeroed, and their G and c never enter dA and dz.
#include <algorithm>
#include <cstring>
#include <vector>

#include "attention/attention.h"
#include "attention/attention_dims.h"
#include "attention/head_loop.h"
#include "backend/cpu_blas.h"
#include "backend/cpu_scratch.h"
#include "backend/dispatch.h"

namespace lt {
namespace {

// Validated key lengths on the host (they also size the CUDA products); empty
// when key_lengths is undefined, meaning all S keys.
std::vector<int32_t> host_key_lengths(const Tensor& key_lengths, const AttentionDims& d, const std::string& what) {
  if (!key_lengths.defined()) return {};
  check(key_lengths.dtype() == DType::i32 && key_lengths.ndim() == 1 && key_lengths.dim(0) == d.N,
        what + ": key_lengths must be int32 [N] = [" + std::to_string(d.N) + "], got " +
            dtype_name(key_lengths.dtype()) + " " + shape_str(key_lengths.shape()));
  std::vector<int32_t> lengths = key_lengths.to_vector_i32();
  for (int64_t n = 0; n < d.N; ++n)
    check(0 <= lengths[n] && lengths[n] <= d.S, what + ": key_lengths[" + std::to_string(n) + "] = " +
                                                    std::to_string(lengths[n]) + " is outside [0, " +
                                                    std::to_string(d.S) + "] (keys [N, S, H, F])");
  return lengths;
}

// A [F, M] = phi(K)^T V and z [F] = phi(K)^T 1 over the first len keys (eq. 5).
void key_value_sums(const float* fk, const float* v, int64_t len, int64_t F, int64_t M, int64_t HF, int64_t HM,
                    float* A, float* z) {
  std::fill(z, z + F, 0.f);
  if (len == 0) {
    std::fill(A, A + F * M, 0.f);
    return;
  }
  cpu::sgemm(true, false, F, M, len, 1.f, fk, HF, v, HM, 0.f, A, M);
  for (int64_t s = 0; s < len; ++s) {
    const float* row = fk + s * HF;
#pragma omp simd
    for (int64_t f = 0; f < F; ++f) z[f] += row[f];
  }
}

// The real query rows of a sequence with len real keys (see attention/attention.h).
int64_t query_rows(const AttentionDims& d, int64_t len) { return d.L == d.S ? len : d.L; }

void zero_head_rows(float* x, int64_t rows, int64_t width, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) std::memset(x + r * ld, 0, sizeof(float) * width);
}

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void linear_attention_forward(const Tensor& fq, const Tensor& fk, const Tensor& v, const Tensor& key_lengths,
                              Tensor& out) {
  const std::string what = "linear_attention_forward";
  const AttentionDims d = attention_dims(fq, fk, v, what);
  check_shape(out, attention_out_shape(d), "linear_attention_forward out");
  Device dev = common_device({&fq, &fk, &v, &key_lengths, &out}, what.c_str());
  const std::vector<int32_t> lengths = host_key_lengths(key_lengths, d, what);
  const int32_t* lengths_p = lengths.empty() ? nullptr : lengths.data();
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::linear_attention_forward(fq.data(), fk.data(), v.data(), lengths_p, out.data(), d.N, d.L, d.S,
                                              d.H, d.E, d.M));

  const int64_t F = d.E, M = d.M, HF = d.H * F, HM = d.H * M;
  const float *qp = fq.data(), *kp = fk.data(), *vp = v.data();
  float* op = out.data();
  const cpu::HeadLoop plan = cpu::plan_head_loop(d.N * d.H);
  const int64_t per_worker = F * M + F;
  float* scratch_p = cpu::scratch(size_t(plan.workers * per_worker));
  cpu::for_each_head(plan, d.N * d.H, [&](int64_t nh, int worker) {
    const int64_t n = nh / d.H, h = nh % d.H, len = lengths_p ? lengths_p[n] : d.S;
    const float* qh = qp + n * d.L * HF + h * F;
    float* oh = op + n * d.L * HM + h * M;
    float* A = scratch_p + worker * per_worker;
    float* z = A + F * M;
    const int64_t rows = query_rows(d, len);
    key_value_sums(kp + n * d.S * HF + h * F, vp + n * d.S * HM + h * M, len, F, M, HF, HM, A, z);
    if (rows > 0) cpu::sgemm(false, false, rows, M, F, 1.f, qh, HF, A, M, 0.f, oh, HM);
#pragma omp parallel for schedule(static) if (!plan.across_heads)
    for (int64_t l = 0; l < d.L; ++l) {
      float* o = oh + l * HM;
      if (l >= rows) {  // a padded query
        std::memset(o, 0, sizeof(float) * M);
        continue;
      }
      const float inv = 1.f / (dot(qh + l * HF, z, F) + kLinearAttentionEps);
#pragma omp simd
      for (int64_t m = 0; m < M; ++m) o[m] *= inv;
    }
  });
}

void linear_attention_backward(const Tensor& fq, const Tensor& fk, const Tensor& v, const Tensor& key_lengths,
                               const Tensor& dout, Tensor& dfq, Tensor& dfk, Tensor& dv) {
  const std::string what = "linear_attention_backward";
  const AttentionDims d = attention_dims(fq, fk, v, what);
  check_shape(dout, attention_out_shape(d), "linear_attention_backward dout");
  check_shape(dfq, fq.shape(), "linear_attention_backward dfq");
  check_shape(dfk, fk.shape(), "linear_attention_backward dfk");
  check_shape(dv, v.shape(), "linear_attention_backward dv");
  Device dev = common_device({&fq, &fk, &v, &key_lengths, &dout, &dfq, &dfk, &dv}, what.c_str());
  const std::vector<int32_t> lengths = host_key_lengths(key_lengths, d, what);
  const int32_t* lengths_p = lengths.empty() ? nullptr : lengths.data();
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::linear_attention_backward(fq.data(), fk.data(), v.data(), lengths_p, dout.data(), dfq.data(),
                                               dfk.data(), dv.data(), d.N, d.L, d.S, d.H, d.E, d.M));

  const int64_t F = d.E, M = d.M, HF = d.H * F, HM = d.H * M;
  const float *qp = fq.data(), *kp = fk.data(), *vp = v.data(), *gp = dout.data();
  float *dqp = dfq.data(), *dkp = dfk.data(), *dvp = dv.data();
  const cpu::HeadLoop plan = cpu::plan_head_loop(d.N * d.H);
  const int64_t per_worker = 2 * (F * M + F) + d.L * M + d.L;
  float* scratch_p = cpu::scratch(size_t(plan.workers * per_worker));
  cpu::for_each_head(plan, d.N * d.H, [&](int64_t nh, int worker) {
    const int64_t n = nh / d.H, h = nh % d.H, len = lengths_p ? lengths_p[n] : d.S;
    const float* qh = qp + n * d.L * HF + h * F;
    const float* kh = kp + n * d.S * HF + h * F;
    const float* vh = vp + n * d.S * HM + h * M;
    const float* gh = gp + n * d.L * HM + h * M;
    float* dqh = dqp + n * d.L * HF + h * F;
    float* dkh = dkp + n * d.S * HF + h * F;
    float* dvh = dvp + n * d.S * HM + h * M;
    float* A = scratch_p + worker * per_worker;
    float* z = A + F * M;
    float* dA = z + F;
    float* dz = dA + F * M;
    float* G = dz + F;
    float* c = G + d.L * M;

    const int64_t rows = query_rows(d, len);
    key_value_sums(kh, vh, len, F, M, HF, HM, A, z);
    if (rows > 0) cpu::sgemm(false, false, rows, M, F, 1.f, qh, HF, A, M, 0.f, G, M);  // num_l
#pragma omp parallel for schedule(static) if (!plan.across_heads)
    for (int64_t l = 0; l < rows; ++l) {
      const float inv = 1.f / (dot(qh + l * HF, z, F) + kLinearAttentionEps);
      const float* g = gh + l * HM;
      float* Gl = G + l * M;
      float acc = 0.f;
#pragma omp simd reduction(+ : acc)
      for (int64_t m = 0; m < M; ++m) {
        const float gm = g[m] * inv;
        acc += gm * Gl[m];
        Gl[m] = gm;
      }
      c[l] = -acc * inv;
    }
    zero_head_rows(dqh + rows * HF, d.L - rows, F, HF);  // padded queries: no gradient
    if (rows > 0) {
      cpu::sgemm(false, true, rows, F, M, 1.f, G, M, A, M, 0.f, dqh, HF);
#pragma omp parallel for schedule(static) if (!plan.across_heads)
      for (int64_t l = 0; l < rows; ++l) {
        float* row = dqh + l * HF;
#pragma omp simd
        for (int64_t f = 0; f < F; ++f) row[f] += c[l] * z[f];
      }
      cpu::sgemm(true, false, F, M, rows, 1.f, qh, HF, G, M, 0.f, dA, M);
      cpu::sgemm(true, false, F, 1, rows, 1.f, qh, HF, c, 1, 0.f, dz, 1);
    } else {
      std::fill(dA, dA + F * M, 0.f);
      std::fill(dz, dz + F, 0.f);
    }
    if (len > 0) {
      cpu::sgemm(false, true, len, F, M, 1.f, vh, HM, dA, M, 0.f, dkh, HF);
      cpu::sgemm(false, false, len, M, F, 1.f, kh, HF, dA, M, 0.f, dvh, HM);
    }
    for (int64_t s = 0; s < d.S; ++s) {
      float* dk_row = dkh + s * HF;
      if (s < len) {
#pragma omp simd
        for (int64_t f = 0; f < F; ++f) dk_row[f] += dz[f];
      } else {  // padded keys: no gradient
        std::memset(dk_row, 0, sizeof(float) * F);
        std::memset(dvh + s * HM, 0, sizeof(float) * M);
      }
    }
  });
}

}  // namespace lt
