// Causal linear attention (eq. 9-12) on the CPU, parallel over the sequence in
// chunks of C positions, forward and backward in O(L) memory.
//
// Values are augmented with a column of ones, v' = [v, 1], so that one causal
// product gives numerator and denominator together:
//   num'_l = [num_l, den_l - eps] = sum_{j<=l} (fq_l . fk_j) v'_j = S'_l^T fq_l,
//   S'_l = [S_l, Z_l] = sum_{j<=l} fk_j v'_j^T,   out_l = num_l / den_l.
// Per chunk (rows Q, K, V' of the chunk, S' the state before it):
//   Num' = tril(Q K^T) V' + Q S',   then S' += K^T V'
// i.e. a handful of small sgemms instead of C rank-1 updates.
//
// Backward (eq. 13-15, with the normaliser's gradient folded in): with g = dout,
// G_l = [g_l / den_l, -(g_l . out_l) / den_l] is the gradient of num'_l and
//   dfq_l = sum_{j<=l} (G_l . v'_j) fk_j   = S'_l G_l
//   dfk_j = sum_{l>=j} (v'_j . G_l) fq_l   = R'_j v'_j,    R'_j = sum_{l>=j} fq_l G_l^T
//   dv_j  = sum_{l>=j} (fk_j . fq_l) G_l   = R'_j^T fk_j   (first M columns)
// A forward pass recomputes S' chunk by chunk for dfq (Algorithm 1, first
// loop); a reverse pass carries R' for dfk and dv (second loop). Per chunk,
// with B = tril(G V'^T) and A = tril(Q K^T):
//   dQ = B K + G S'^T,   dK = B^T Q + V' R'^T,   dV = A^T G + K R'.
// Scratch is O(C^2 + F M) per thread; only 1/den and the denominator's
// gradient (two floats per position) pass from the first loop to the second.
//
// Lengths: sequence n runs over its first len positions only, so padding
// changes no state, and its output and gradient rows are written as zeros.
// Continuing a state (causal_linear_attention_continue) is the forward loop
// started from S' = [S, Z] instead of zeros, which then writes S' back.
//
// Every product is row-major A B or A^T B: OpenBLAS runs those through its
// small-matrix kernels, but A B^T through the packed general path, 2-5x
// slower at these sizes. Where a B^T would appear, a transposed copy
// (O(C F) per chunk, against O(C^2 F) flops) is staged instead.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

#include "attention/attention.h"
#include "attention/lengths.h"
#include "backend/bf16.h"
#include "backend/cpu_blas.h"
#include "backend/cpu_scratch.h"
#include "backend/dispatch.h"

namespace lt {
namespace {

// Chunk length: the in-chunk products cost O(C (F + M)) flops per position,
// the state products O(F M). Measured (AMD EPYC, F = M = 32 and 64): 32 is
// fastest; 16 runs the sgemms too small, 64 spends twice the in-chunk flops.
constexpr int64_t kChunk = 32;

struct CausalDims {
  int64_t N, L, H, F, M;
  int64_t M1() const { return M + 1; }   // width of the augmented values v'
  int64_t ldq() const { return H * F; }  // row stride of fq, fk in [N, L, H, F]
  int64_t ldv() const { return H * M; }  // row stride of v, out in [N, L, H, M]
};

CausalDims causal_dims(const Tensor& fq, const Tensor& fk, const Tensor& v, const std::string& what) {
  check(fq.ndim() == 4 && fq.dim(3) > 0,
        what + ": queries must be [N, L, H, F] with F > 0, got " + shape_str(fq.shape()));
  check(fk.shape() == fq.shape(),
        what + ": keys " + shape_str(fk.shape()) + " must have the queries' shape " + shape_str(fq.shape()));
  CausalDims d{fq.dim(0), fq.dim(1), fq.dim(2), fq.dim(3), 0};
  check(v.ndim() == 4 && v.dim(0) == d.N && v.dim(1) == d.L && v.dim(2) == d.H && v.dim(3) > 0,
        what + ": values " + shape_str(v.shape()) + " do not match queries " + shape_str(fq.shape()) +
            " (expected [N, L, H, M] = [" + std::to_string(d.N) + ", " + std::to_string(d.L) + ", " +
            std::to_string(d.H) + ", M > 0])");
  d.M = v.dim(3);
  return d;
}

// One (n, h) sequence inside the [N, L, H, D] layouts: row t of each operand
// starts at ptr + t * ld.
struct Sequence {
  const float *q, *k, *v;
  int64_t offset_qk;  // of (n, 0, h, 0) in [N, L, H, F]
  int64_t offset_v;   // of (n, 0, h, 0) in [N, L, H, M]
};

Sequence sequence(const CausalDims& d, const Tensor& fq, const Tensor& fk, const Tensor& v, int64_t nh) {
  const int64_t n = nh / d.H, h = nh % d.H;
  const int64_t offset_qk = n * d.L * d.H * d.F + h * d.F, offset_v = n * d.L * d.H * d.M + h * d.M;
  return {fq.data() + offset_qk, fk.data() + offset_qk, v.data() + offset_v, offset_qk, offset_v};
}

// Per-thread scratch (cpu::scratch: allocated once, for the largest call).
struct Workspace {
  float* buf;
  float *A, *B;          // [C, C] tril(Q K^T), tril(G V'^T)
  float *Kt;             // [F, C] K^T of the chunk
  float *V1, *V1t;       // [C, M+1] v' = [v, 1] and its transpose [M+1, C]
  float *G, *P;          // [C, M+1] gradient of num', num'
  float *state, *state_t;  // [F, M+1] S' or R', and its transpose [M+1, F]
  explicit Workspace(const CausalDims& d)
      : buf(cpu::scratch(size_t(2 * kChunk * kChunk + kChunk * d.F + 4 * kChunk * d.M1() + 2 * d.F * d.M1()))) {
    A = buf;
    B = A + kChunk * kChunk;
    Kt = B + kChunk * kChunk;
    V1 = Kt + kChunk * d.F;
    V1t = V1 + kChunk * d.M1();
    G = V1t + kChunk * d.M1();
    P = G + kChunk * d.M1();
    state = P + kChunk * d.M1();
    state_t = state + d.F * d.M1();
  }
};

// dst[j, i] = src[i, j] for a rows x cols block. With AVX-512, 16 x 16 tiles
// are transposed in registers (masked loads and stores cover the edges):
// 32-bit, then 64-bit interleaves within 128-bit lanes, then lane shuffles.
#ifdef __AVX512F__
// The maskz forms (all lanes on) compile to the plain instructions; the plain
// intrinsics trip GCC 12's -Wmaybe-uninitialized on their undefined passthrough.
constexpr __mmask16 kAll16 = 0xFFFF;
constexpr __mmask8 kAll8 = 0xFF;
void transpose(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    const int64_t ni = std::min<int64_t>(16, rows - i0);
    const __mmask16 row_mask = static_cast<__mmask16>((1u << ni) - 1);
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int64_t nj = std::min<int64_t>(16, cols - j0);
      const __mmask16 col_mask = static_cast<__mmask16>((1u << nj) - 1);
      __m512 r[16], a[16], b[16];
      for (int i = 0; i < 16; ++i)
        r[i] = i < ni ? _mm512_maskz_loadu_ps(col_mask, src + (i0 + i) * ld_src + j0) : _mm512_setzero_ps();
      for (int k = 0; k < 8; ++k) {
        a[2 * k] = _mm512_maskz_unpacklo_ps(kAll16, r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm512_maskz_unpackhi_ps(kAll16, r[2 * k], r[2 * k + 1]);
      }
      for (int k = 0; k < 4; ++k) {
        const __m512d a0 = _mm512_castps_pd(a[4 * k]), a1 = _mm512_castps_pd(a[4 * k + 1]);
        const __m512d a2 = _mm512_castps_pd(a[4 * k + 2]), a3 = _mm512_castps_pd(a[4 * k + 3]);
        b[4 * k] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, a0, a2));
        b[4 * k + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, a0, a2));
        b[4 * k + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, a1, a3));
        b[4 * k + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, a1, a3));
      }
      for (int c = 0; c < 4; ++c) {
        const __m512 u0 = _mm512_maskz_shuffle_f32x4(kAll16, b[c], b[4 + c], 0x44), u1 = _mm512_maskz_shuffle_f32x4(kAll16, b[c], b[4 + c], 0xEE);
        const __m512 v0 = _mm512_maskz_shuffle_f32x4(kAll16, b[8 + c], b[12 + c], 0x44), v1 = _mm512_maskz_shuffle_f32x4(kAll16, b[8 + c], b[12 + c], 0xEE);
        r[c] = _mm512_maskz_shuffle_f32x4(kAll16, u0, v0, 0x88);
        r[4 + c] = _mm512_maskz_shuffle_f32x4(kAll16, u0, v0, 0xDD);
        r[8 + c] = _mm512_maskz_shuffle_f32x4(kAll16, u1, v1, 0x88);
        r[12 + c] = _mm512_maskz_shuffle_f32x4(kAll16, u1, v1, 0xDD);
      }
      for (int j = 0; j < nj; ++j) _mm512_mask_storeu_ps(dst + (j0 + j) * ld_dst + i0, row_mask, r[j]);
    }
  }
}
#else
void transpose(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * ld_dst + i] = src[i * ld_src + j];
}
#endif

// V1[i] = [v_{t0+i}, 1] for the c rows of a chunk.
void load_augmented_values(const float* v, int64_t ldv, int64_t M, int64_t c, float* V1) {
  for (int64_t i = 0; i < c; ++i) {
    const float* src = v + i * ldv;
    float* dst = V1 + i * (M + 1);
    for (int64_t m = 0; m < M; ++m) dst[m] = src[m];  // inlined: rows are short for memmove
    dst[M] = 1.f;
  }
}

// Zero the strictly upper triangle of the c x c matrix X (leading dimension kChunk).
void causal_mask(float* X, int64_t c) {
  for (int64_t i = 0; i < c; ++i) std::fill(X + i * kChunk + i + 1, X + i * kChunk + c, 0.f);
}

// A = tril(Q K^T) for the chunk's c rows of q; stages Kt = K^T on the way.
void chunk_scores(const float* q, const float* k, int64_t ld, int64_t F, int64_t c, float* Kt, float* A) {
  transpose(k, ld, c, F, Kt, kChunk);
  cpu::sgemm(false, false, c, c, F, 1.f, q, ld, Kt, kChunk, 0.f, A, kChunk);
  causal_mask(A, c);
}

// B = tril(G V'^T); stages V1t = V'^T on the way.
void chunk_gradient_scores(const float* G, const float* V1, int64_t M1, int64_t c, float* V1t, float* B) {
  transpose(V1, M1, c, M1, V1t, kChunk);
  cpu::sgemm(false, false, c, c, M1, 1.f, G, M1, V1t, kChunk, 0.f, B, kChunk);
  causal_mask(B, c);
}

// P = num' of the chunk = A V1 + Q S' (S' the state before the chunk).
void chunk_numerator(const float* q, int64_t ld, const CausalDims& d, int64_t c, bool has_state,
                     const float* A, const float* V1, const float* S, float* P) {
  const int64_t M1 = d.M1();
  if (has_state) cpu::sgemm(false, false, c, M1, d.F, 1.f, q, ld, S, M1, 0.f, P, M1);
  cpu::sgemm(false, false, c, M1, c, 1.f, A, kChunk, V1, M1, has_state ? 1.f : 0.f, P, M1);
}

// Eq. 9-12 over the first len positions of one (n, h) sequence into its
// output rows o (row stride ldv); rows len..L-1 are zeroed. Starts from the
// state S' in w.state when has_state (else from zeros) and leaves the state
// after position len - 1 there.
void forward_sequence(const CausalDims& d, const Sequence& s, int64_t len, bool has_state, Workspace& w, float* o) {
  const int64_t ld = d.ldq(), ldv = d.ldv(), M = d.M, M1 = d.M1();
  for (int64_t t0 = 0; t0 < len; t0 += kChunk) {
    const int64_t c = std::min(kChunk, len - t0);
    const bool state = has_state || t0 > 0;
    const float *q = s.q + t0 * ld, *k = s.k + t0 * ld;
    load_augmented_values(s.v + t0 * ldv, ldv, M, c, w.V1);
    chunk_scores(q, k, ld, d.F, c, w.Kt, w.A);
    chunk_numerator(q, ld, d, c, state, w.A, w.V1, w.state, w.P);
    // S' += K^T V' (eq. 10-11, summed over the chunk)
    cpu::sgemm(true, false, d.F, M1, c, 1.f, k, ld, w.V1, M1, state ? 1.f : 0.f, w.state, M1);
    for (int64_t i = 0; i < c; ++i) {  // eq. 12
      const float* p = w.P + i * M1;
      const float inv = 1.f / (p[M] + kLinearAttentionEps);
      float* row = o + (t0 + i) * ldv;
      for (int64_t m = 0; m < M; ++m) row[m] = p[m] * inv;
    }
  }
  for (int64_t t = len; t < d.L; ++t) std::fill(o + t * ldv, o + t * ldv + M, 0.f);
}

// S' = [S, Z] of pair nh into state [F, M+1], and back; a bfloat16 S is
// widened on the way in and rounded once on the way out.
template <typename T>
void load_state(const T* S, const float* Z, const CausalDims& d, int64_t nh, float* state) {
  for (int64_t f = 0; f < d.F; ++f) {
    const T* row = S + (nh * d.F + f) * d.M;
    float* dst = state + f * d.M1();
    for (int64_t m = 0; m < d.M; ++m) {
      if constexpr (std::is_same_v<T, uint16_t>)
        dst[m] = bf16_to_float(row[m]);
      else
        dst[m] = row[m];
    }
    dst[d.M] = Z[nh * d.F + f];
  }
}

template <typename T>
void store_state(const float* state, const CausalDims& d, int64_t nh, T* S, float* Z) {
  for (int64_t f = 0; f < d.F; ++f) {
    T* row = S + (nh * d.F + f) * d.M;
    const float* src = state + f * d.M1();
    for (int64_t m = 0; m < d.M; ++m) {
      if constexpr (std::is_same_v<T, uint16_t>)
        row[m] = float_to_bf16(src[m]);
      else
        row[m] = src[m];
    }
    Z[nh * d.F + f] = src[d.M];
  }
}

// Backward, first loop (Algorithm 1) over the first len positions: S' before
// each chunk gives num', G and dQ = B K + G S'^T; saves 1/den and the
// denominator's gradient per position in inv_dden for the second loop.
void backward_queries(const CausalDims& d, const Sequence& s, int64_t len, const float* g, Workspace& w,
                      float* inv_dden, float* dq) {
  const int64_t ld = d.ldq(), ldv = d.ldv(), F = d.F, M = d.M, M1 = d.M1();
  for (int64_t t0 = 0; t0 < len; t0 += kChunk) {
    const int64_t c = std::min(kChunk, len - t0);
    const float *q = s.q + t0 * ld, *k = s.k + t0 * ld;
    const bool has_state = t0 > 0;
    load_augmented_values(s.v + t0 * ldv, ldv, M, c, w.V1);
    chunk_scores(q, k, ld, F, c, w.Kt, w.A);
    chunk_numerator(q, ld, d, c, has_state, w.A, w.V1, w.state, w.P);
    for (int64_t i = 0; i < c; ++i) {
      const float *p = w.P + i * M1, *gi = g + (t0 + i) * ldv;
      const float inv = 1.f / (p[M] + kLinearAttentionEps);
      float g_dot_num = 0.f;
#pragma omp simd reduction(+ : g_dot_num)
      for (int64_t m = 0; m < M; ++m) g_dot_num += gi[m] * p[m];
      const float dden = -g_dot_num * inv * inv;
      float* Gi = w.G + i * M1;
      for (int64_t m = 0; m < M; ++m) Gi[m] = gi[m] * inv;
      Gi[M] = dden;
      inv_dden[(t0 + i) * 2] = inv;
      inv_dden[(t0 + i) * 2 + 1] = dden;
    }
    chunk_gradient_scores(w.G, w.V1, M1, c, w.V1t, w.B);
    float* dqc = dq + t0 * ld;
    cpu::sgemm(false, false, c, F, c, 1.f, w.B, kChunk, k, ld, 0.f, dqc, ld);
    if (has_state) {
      transpose(w.state, M1, F, M1, w.state_t, F);
      cpu::sgemm(false, false, c, F, M1, 1.f, w.G, M1, w.state_t, F, 1.f, dqc, ld);
    }
    cpu::sgemm(true, false, F, M1, c, 1.f, k, ld, w.V1, M1, has_state ? 1.f : 0.f, w.state, M1);
  }
}

// Backward, second loop, from the last real chunk back: R' = sum over later
// chunks of Q^T G gives dK = B^T Q + V' R'^T and dV = A^T G + K R'.
void backward_keys_values(const CausalDims& d, const Sequence& s, int64_t len, const float* g,
                          const float* inv_dden, Workspace& w, float* dk, float* dvp) {
  if (len == 0) return;
  const int64_t ld = d.ldq(), ldv = d.ldv(), F = d.F, M = d.M, M1 = d.M1();
  const int64_t last = (len - 1) / kChunk * kChunk;
  for (int64_t t0 = last; t0 >= 0; t0 -= kChunk) {
    const int64_t c = std::min(kChunk, len - t0);
    const float *q = s.q + t0 * ld, *k = s.k + t0 * ld;
    const bool has_state = t0 != last;
    load_augmented_values(s.v + t0 * ldv, ldv, M, c, w.V1);
    for (int64_t i = 0; i < c; ++i) {
      const float* gi = g + (t0 + i) * ldv;
      const float inv = inv_dden[(t0 + i) * 2];
      float* Gi = w.G + i * M1;
      for (int64_t m = 0; m < M; ++m) Gi[m] = gi[m] * inv;
      Gi[M] = inv_dden[(t0 + i) * 2 + 1];
    }
    chunk_scores(q, k, ld, F, c, w.Kt, w.A);
    chunk_gradient_scores(w.G, w.V1, M1, c, w.V1t, w.B);
    float *dkc = dk + t0 * ld, *dvc = dvp + t0 * ldv;
    cpu::sgemm(true, false, c, F, c, 1.f, w.B, kChunk, q, ld, 0.f, dkc, ld);
    cpu::sgemm(true, false, c, M, c, 1.f, w.A, kChunk, w.G, M1, 0.f, dvc, ldv);
    if (has_state) {
      transpose(w.state, M1, F, M1, w.state_t, F);
      cpu::sgemm(false, false, c, F, M1, 1.f, w.V1, M1, w.state_t, F, 1.f, dkc, ld);
      cpu::sgemm(false, false, c, M, F, 1.f, k, ld, w.state, M1, 1.f, dvc, ldv);
    }
    cpu::sgemm(true, false, F, M1, c, 1.f, q, ld, w.G, M1, has_state ? 1.f : 0.f, w.state, M1);
  }
}

template <typename T>
void continue_pairs(const CausalDims& d, const Tensor& fq, const Tensor& fk, const Tensor& v,
                    const int32_t* lengths, T* S, float* Z, Tensor& out) {
  cpu::SingleThreadedBlas single;
#pragma omp parallel
  {
    Workspace w(d);
#pragma omp for schedule(static)
    for (int64_t nh = 0; nh < d.N * d.H; ++nh) {
      const Sequence s = sequence(d, fq, fk, v, nh);
      load_state(S, Z, d, nh, w.state);
      forward_sequence(d, s, length_of(lengths, nh / d.H, d.L), true, w, out.data() + s.offset_v);
      store_state(w.state, d, nh, S, Z);
    }
  }
}

}  // namespace

void causal_linear_attention_forward(const Tensor& fq, const Tensor& fk, const Tensor& v, const Tensor& lengths,
                                     Tensor& out, bool tf32) {
  const std::string what = "causal_linear_attention_forward";
  const CausalDims d = causal_dims(fq, fk, v, what);
  check_shape(out, v.shape(), "causal_linear_attention_forward out");
  Device dev = common_device({&fq, &fk, &v, &lengths, &out}, what.c_str());
  check(!tf32 || dev == Device::cuda, what + ": tf32 needs CUDA");
  const int32_t* lens = lengths_data(lengths, d.N, d.L, what + " lengths");
  if (out.numel() == 0) return;
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::causal_linear_attention_forward(fq.data(), fk.data(), v.data(), lens, out.data(), d.N, d.L,
                                                     d.H, d.F, d.M, tf32));

  cpu::SingleThreadedBlas single;
#pragma omp parallel
  {
    Workspace w(d);
#pragma omp for schedule(static)
    for (int64_t nh = 0; nh < d.N * d.H; ++nh) {
      const Sequence s = sequence(d, fq, fk, v, nh);
      forward_sequence(d, s, length_of(lens, nh / d.H, d.L), false, w, out.data() + s.offset_v);
    }
  }
}

void causal_linear_attention_continue(const Tensor& fq, const Tensor& fk, const Tensor& v, const Tensor& lengths,
                                      Tensor& S, Tensor& Z, Tensor& out) {
  const std::string what = "causal_linear_attention_continue";
  const CausalDims d = causal_dims(fq, fk, v, what);
  check_shape(S, {d.N, d.H, d.F, d.M}, "causal_linear_attention_continue state S");
  check_shape(Z, {d.N, d.H, d.F}, "causal_linear_attention_continue normaliser Z");
  check_shape(out, v.shape(), "causal_linear_attention_continue out");
  check(S.dtype() == DType::f32 || S.dtype() == DType::bf16,
        what + ": state S must be float32 or bfloat16, got " + dtype_name(S.dtype()));
  Device dev = common_device({&fq, &fk, &v, &lengths, &S, &Z, &out}, what.c_str());
  const int32_t* lens = lengths_data(lengths, d.N, d.L, what + " lengths");
  if (S.numel() == 0) return;  // no (n, h) pairs, or M == 0 or F == 0 (causal_dims refuses the last two)
  const bool bf16 = S.dtype() == DType::bf16;
  if (dev == Device::cuda && bf16)
    LT_ON_CUDA(cuda::causal_linear_attention_continue_bf16(fq.data(), fk.data(), v.data(), lens, S.data_bf16(),
                                                           Z.data(), out.data(), d.N, d.L, d.H, d.F, d.M));
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::causal_linear_attention_continue(fq.data(), fk.data(), v.data(), lens, S.data(), Z.data(),
                                                      out.data(), d.N, d.L, d.H, d.F, d.M));
  if (bf16)
    continue_pairs(d, fq, fk, v, lens, S.data_bf16(), Z.data(), out);
  else
    continue_pairs(d, fq, fk, v, lens, S.data(), Z.data(), out);
}

void causal_linear_attention_backward(const Tensor& fq, const Tensor& fk, const Tensor& v, const Tensor& lengths,
                                      const Tensor& dout, Tensor& dfq, Tensor& dfk, Tensor& dv, bool tf32) {
  const std::string what = "causal_linear_attention_backward";
  const CausalDims d = causal_dims(fq, fk, v, what);
  check_shape(dout, v.shape(), "causal_linear_attention_backward dout");
  check_shape(dfq, fq.shape(), "causal_linear_attention_backward dfq");
  check_shape(dfk, fk.shape(), "causal_linear_attention_backward dfk");
  check_shape(dv, v.shape(), "causal_linear_attention_backward dv");
  Device dev = common_device({&fq, &fk, &v, &lengths, &dout, &dfq, &dfk, &dv}, what.c_str());
  check(!tf32 || dev == Device::cuda, what + ": tf32 needs CUDA");
  const int32_t* lens = lengths_data(lengths, d.N, d.L, what + " lengths");
  if (dv.numel() == 0) return;
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::causal_linear_attention_backward(fq.data(), fk.data(), v.data(), lens, dout.data(),
                                                      dfq.data(), dfk.data(), dv.data(), d.N, d.L, d.H, d.F, d.M,
                                                      tf32));

  // Per position: 1/den_l and the denominator's gradient -(g_l . out_l) / den_l,
  // from which the reverse loop rebuilds G without recomputing S'.
  float* saved = cpu::scratch(static_cast<size_t>(d.N * d.H * d.L) * 2, cpu::kScratchSaved);
  cpu::SingleThreadedBlas single;
#pragma omp parallel
  {
    Workspace w(d);
#pragma omp for schedule(static)
    for (int64_t nh = 0; nh < d.N * d.H; ++nh) {
      const Sequence s = sequence(d, fq, fk, v, nh);
      const int64_t len = length_of(lens, nh / d.H, d.L);
      const float* g = dout.data() + s.offset_v;
      float *dq = dfq.data() + s.offset_qk, *dk = dfk.data() + s.offset_qk, *dvp = dv.data() + s.offset_v;
      float* inv_dden = saved + nh * d.L * 2;
      backward_queries(d, s, len, g, w, inv_dden, dq);
      backward_keys_values(d, s, len, g, inv_dden, w, dk, dvp);
      for (int64_t t = len; t < d.L; ++t) {  // padding: no gradient
        std::fill(dq + t * d.ldq(), dq + t * d.ldq() + d.F, 0.f);
        std::fill(dk + t * d.ldq(), dk + t * d.ldq() + d.F, 0.f);
        std::fill(dvp + t * d.ldv(), dvp + t * d.ldv() + d.M, 0.f);
      }
    }
  }
}

}  // namespace lt
