// One recurrent step of causal linear attention (eq. 16-20) on the CPU:
// S += phi(k) v^T, Z += phi(k), out = phi(q)^T S / (phi(q)^T Z + eps).
// The state is updated and read in the same sweep over its rows, so each
// (n, h) touches S once per step; loops run over the contiguous M axis and
// vectorise. No allocation: the step is the generation hot loop. S is kept
// in float32 or in bfloat16 (half the bytes): sums are float32 either way,
// and a bf16 state is rounded once per step, when it is stored.
// The packed step applies an elementwise phi as it reads q and k; any other
// map (FAVOR+) gets a pass of its own into phi(q), phi(k) buffers of width
// F = phi.feature_dim(E), then the plain step runs on them.
#include <string>
#include <vector>

#include "attention/attention.h"
#include "backend/bf16.h"
#include "backend/dispatch.h"
#include "ops/ops.h"
#include "ops/simd_math.h"

namespace lt {

namespace {
// The step runs once per token and layer: error messages are built only on failure.
void expect_shape(const Tensor& t, const Shape& expected, const char* what) {
  if (t.shape() != expected) check_shape(t, expected, what);
}
// State elements as stored (float or bf16 bits) to and from float32.
inline float load(const float* p) { return *p; }
inline float load(const uint16_t* p) { return bf16_to_float(*p); }
inline void store(float* p, float x) { *p = x; }
inline void store(uint16_t* p, float x) { *p = float_to_bf16(x); }

// One (n, h): the M axis is the vector axis.
template <typename T>
void step_pair(const float* __restrict q, const float* __restrict k, const float* __restrict val,
               T* __restrict S, float* __restrict z, float* __restrict o, int64_t F, int64_t M) {
  for (int64_t m = 0; m < M; ++m) o[m] = 0.f;
  float den = 0.f;
  for (int64_t f = 0; f < F; ++f) {
    T* __restrict row = S + f * M;
    const float kf = k[f], qf = q[f];
    for (int64_t m = 0; m < M; ++m) {
      const float s = load(row + m) + kf * val[m];  // eq. 18
      store(row + m, s);
      o[m] += qf * s;
    }
    z[f] += kf;  // eq. 19
    den += qf * z[f];
  }
  const float inv = 1.f / (den + kLinearAttentionEps);  // eq. 20
  for (int64_t m = 0; m < M; ++m) o[m] *= inv;
}

// The same with M known at compile time (the common head sizes): the output
// sums live in registers, split over even and odd f so that consecutive rows
// do not wait on one FMA chain.
template <int M, typename T>
void step_pair_fixed(const float* __restrict q, const float* __restrict k, const float* __restrict val,
                     T* __restrict S, float* __restrict z, float* __restrict o, int64_t F, const T* ahead) {
  float even[M] = {}, odd[M] = {};
  float den_even = 0.f, den_odd = 0.f;
  int64_t f = 0;
  for (; f + 1 < F; f += 2) {
    T* __restrict r0 = S + f * M;
    T* __restrict r1 = r0 + M;
    const float k0 = k[f], q0 = q[f], k1 = k[f + 1], q1 = q[f + 1];
    if (ahead)
      for (int64_t b = 0; b < 2 * M * int64_t(sizeof(T)); b += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(ahead + f * M) + b, 1);
#pragma omp simd
    for (int64_t m = 0; m < M; ++m) {
      const float a = load(r0 + m) + k0 * val[m], b = load(r1 + m) + k1 * val[m];  // eq. 18
      store(r0 + m, a);
      store(r1 + m, b);
      even[m] += q0 * a;
      odd[m] += q1 * b;
    }
    z[f] += k0;  // eq. 19
    z[f + 1] += k1;
    den_even += q0 * z[f];
    den_odd += q1 * z[f + 1];
  }
  if (f < F) {
    T* __restrict r0 = S + f * M;
    const float k0 = k[f], q0 = q[f];
#pragma omp simd
    for (int64_t m = 0; m < M; ++m) {
      const float a = load(r0 + m) + k0 * val[m];
      store(r0 + m, a);
      even[m] += q0 * a;
    }
    z[f] += k0;
    den_even += q0 * z[f];
  }
  const float inv = 1.f / (den_even + den_odd + kLinearAttentionEps);  // eq. 20
#pragma omp simd
  for (int64_t m = 0; m < M; ++m) o[m] = (even[m] + odd[m]) * inv;
}

template <typename T>
void step_one(const float* q, const float* k, const float* val, T* s, float* z, float* o, int64_t F, int64_t M,
              const T* ahead = nullptr) {
  if (M == 32)
    step_pair_fixed<32>(q, k, val, s, z, o, F, ahead);
  else if (M == 64)
    step_pair_fixed<64>(q, k, val, s, z, o, F, ahead);
  else
    step_pair(q, k, val, s, z, o, F, M);
}

// A thread fork costs about as much as a small head's whole step.
// A pool's step (rows given) stays on its thread: a row may come again, and
// its positions must step in order.
inline bool parallel_step(int64_t pairs, int64_t F, int64_t M, const int64_t* rows) {
  return !rows && pairs * F * M >= (1 << 15);
}

// The state pair of input pair p: row rows[n] of the state for batch element
// n (a pool's rows), or n itself.
inline int64_t state_pair(int64_t p, int64_t H, const int64_t* rows) { return rows ? rows[p / H] * H + p % H : p; }

template <typename T>
void step_pairs(const float* qp, const float* kp, const float* vp, T* Sp, float* Zp, float* op, int64_t pairs,
                int64_t H, int64_t F, int64_t M, const int64_t* rows) {
#pragma omp parallel for schedule(static) if (parallel_step(pairs, F, M, rows))
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t s = state_pair(p, H, rows);
    step_one(qp + p * F, kp + p * F, vp + p * M, Sp + s * F * M, Zp + s * F, op + p * M, F, M);
  }
}

// From qkv rows [N, 3, H, E]: phi(q) and phi(k) of a pair go to a per-thread
// buffer of 2E floats, the values are read in place.
template <typename T, class Phi>
void step_pairs_packed(const float* qkv, Phi phi, T* Sp, float* Zp, float* op, int64_t N, int64_t H, int64_t E,
                       const int64_t* rows) {
  const int64_t pairs = N * H;
#pragma omp parallel if (parallel_step(pairs, E, E, rows))
  {
    thread_local std::vector<float> phi_qk;
    if (int64_t(phi_qk.size()) < 2 * E) phi_qk.resize(2 * E);
    float *fq = phi_qk.data(), *fk = fq + E;
#pragma omp for schedule(static)
    for (int64_t p = 0; p < pairs; ++p) {
      const float* q = qkv + (p / H) * 3 * H * E + (p % H) * E;
      const float* k = q + H * E;
#pragma omp simd
      for (int64_t e = 0; e < E; ++e) {
        fq[e] = phi(q[e]);
        fk[e] = phi(k[e]);
      }
      const int64_t s = state_pair(p, H, rows);
      const T* ahead = p + 1 < pairs ? Sp + state_pair(p + 1, H, rows) * E * E : nullptr;
      step_one(fq, fk, k + H * E, Sp + s * E * E, Zp + s * E, op + p * E, E, E, ahead);
    }
  }
}

template <typename T>
void step_packed(const float* qkv, Elementwise phi, T* S, float* Z, float* out, int64_t N, int64_t H, int64_t E,
                 const int64_t* rows) {
  // Lambdas, not function pointers: the phi loop then inlines and vectorises.
  if (phi == Elementwise::relu)
    step_pairs_packed(qkv, [](float v) { return simd_math::relu(v); }, S, Z, out, N, H, E, rows);
  else
    step_pairs_packed(qkv, [](float v) { return simd_math::elu_plus_one(v); }, S, Z, out, N, H, E, rows);
}

// Buffers of the phi pass that only grow, so that the step allocates nothing
// after its first call: a per-thread vector on the CPU, scratch slot 2 on CUDA
// (slot 0 stays free for the map's own forward).
float* phi_pass_buffer(Device dev, int64_t floats) {
#ifdef LT_WITH_CUDA
  if (dev == Device::cuda) return cuda::scratch(size_t(floats), 2);
#endif
  (void)dev;
  thread_local std::vector<float> buffer;
  if (int64_t(buffer.size()) < floats) buffer.resize(size_t(floats));
  return buffer.data();
}

// A map that is not elementwise: q, k and v leave the qkv rows for buffers of
// their own, the map computes phi(q), phi(k) [N, H, F], and the plain step runs.
void step_with_phi_pass(const Tensor& qkv, const FeatureMap& phi, Tensor& S, Tensor& Z, Tensor& out, int64_t F,
                        const int64_t* rows) {
  const int64_t N = qkv.dim(0), H = qkv.dim(2), E = qkv.dim(3), HE = H * E;
  const Device dev = qkv.device();
  float* base = phi_pass_buffer(dev, N * (3 * HE + 2 * H * F));
  Tensor q = Tensor::wrap(base, {N, HE}, dev), k = Tensor::wrap(base + N * HE, {N, HE}, dev);
  Tensor v = Tensor::wrap(base + 2 * N * HE, {N, HE}, dev);
  Tensor fq = Tensor::wrap(base + 3 * N * HE, {N, H, F}, dev), fk = Tensor::wrap(base + 3 * N * HE + N * H * F, {N, H, F}, dev);
  const Tensor projections = qkv.reshape({N, 3 * HE});
  copy_columns(projections, 0, q);
  copy_columns(projections, HE, k);
  copy_columns(projections, 2 * HE, v);
  phi.forward(q.reshape({N, H, E}), fq);
  phi.forward(k.reshape({N, H, E}), fk);
  linear_attention_step(fq, fk, v.reshape({N, H, E}), S, Z, out, rows);
}

// A row map needs every row inside the state. On a GPU the map is in device
// memory, where its caller (TransformerStack::step_rows) checked it.
void check_rows(const int64_t* rows, int64_t N, int64_t state_rows, Device dev, const char* what) {
  if (!rows || dev == Device::cuda) return;
  for (int64_t n = 0; n < N; ++n)
    if (rows[n] < 0 || rows[n] >= state_rows)
      throw Error(std::string(what) + ": row " + std::to_string(rows[n]) + " outside the state's " +
                  std::to_string(state_rows));
}
}  // namespace

void linear_attention_step(const Tensor& fq, const Tensor& fk, const Tensor& v, Tensor& S, Tensor& Z,
                           Tensor& out, const int64_t* rows) {
  const char* what = "linear_attention_step";
  if (fq.ndim() != 3)
    throw Error(std::string(what) + ": queries must be [N, H, F], got " + shape_str(fq.shape()));
  const int64_t N = fq.dim(0), H = fq.dim(1), F = fq.dim(2);
  if (fk.shape() != fq.shape())
    throw Error(std::string(what) + ": keys " + shape_str(fk.shape()) + " must have the queries' shape " +
                shape_str(fq.shape()));
  if (v.ndim() != 3 || v.dim(0) != N || v.dim(1) != H)
    throw Error(std::string(what) + ": values " + shape_str(v.shape()) + " do not match queries " +
                shape_str(fq.shape()) + " (expected [N, H, M])");
  const int64_t M = v.dim(2), R = rows ? S.dim(0) : N;
  expect_shape(S, {R, H, F, M}, "linear_attention_step state S");
  expect_shape(Z, {R, H, F}, "linear_attention_step normaliser Z");
  expect_shape(out, v.shape(), "linear_attention_step out");
  Device dev = common_device({&fq, &fk, &v, &S, &Z, &out}, what);
  check_rows(rows, N, R, dev, what);
  if (out.numel() == 0) return;
  if (dev == Device::cuda && S.dtype() == DType::bf16)
    LT_ON_CUDA(cuda::linear_attention_step_bf16(fq.data(), fk.data(), v.data(), S.data_bf16(), Z.data(), out.data(),
                                                N, H, F, M, rows));
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::linear_attention_step(fq.data(), fk.data(), v.data(), S.data(), Z.data(), out.data(), N, H, F, M,
                                           rows));

  if (S.dtype() == DType::bf16)
    step_pairs(fq.data(), fk.data(), v.data(), S.data_bf16(), Z.data(), out.data(), N * H, H, F, M, rows);
  else
    step_pairs(fq.data(), fk.data(), v.data(), S.data(), Z.data(), out.data(), N * H, H, F, M, rows);
}

void linear_attention_step_packed(const Tensor& qkv, const FeatureMap& phi, Tensor& S, Tensor& Z, Tensor& out,
                                  const int64_t* rows) {
  const char* what = "linear_attention_step_packed";
  if (qkv.ndim() != 4 || qkv.dim(1) != 3)
    throw Error(std::string(what) + ": projections must be [N, 3, H, E], got " + shape_str(qkv.shape()));
  const int64_t N = qkv.dim(0), H = qkv.dim(2), E = qkv.dim(3), F = phi.feature_dim(E);
  const Elementwise kind = phi.elementwise();
  if (kind != Elementwise::none && F != E)
    throw Error(std::string(what) + ": elementwise feature map '" + phi.name() + "' gives " + std::to_string(F) +
                " features for head dimension " + std::to_string(E));
  const int64_t R = rows ? S.dim(0) : N;
  expect_shape(S, {R, H, F, E}, "linear_attention_step_packed state S");
  expect_shape(Z, {R, H, F}, "linear_attention_step_packed normaliser Z");
  expect_shape(out, {N, H, E}, "linear_attention_step_packed out");
  Device dev = common_device({&qkv, &S, &Z, &out}, what);
  check_rows(rows, N, R, dev, what);
  if (out.numel() == 0) return;
  if (kind == Elementwise::none) return step_with_phi_pass(qkv, phi, S, Z, out, F, rows);
  if (dev == Device::cuda && S.dtype() == DType::bf16)
    LT_ON_CUDA(cuda::linear_attention_step_packed_bf16(qkv.data(), kind, S.data_bf16(), Z.data(), out.data(), N, H, E,
                                                       rows));
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::linear_attention_step_packed(qkv.data(), kind, S.data(), Z.data(), out.data(), N, H, E, rows));

  if (S.dtype() == DType::bf16)
    step_packed(qkv.data(), kind, S.data_bf16(), Z.data(), out.data(), N, H, E, rows);
  else
    step_packed(qkv.data(), kind, S.data(), Z.data(), out.data(), N, H, E, rows);
}

}  // namespace lt
