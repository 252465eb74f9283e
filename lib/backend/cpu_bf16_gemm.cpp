// bf16 matrix product, blocked as GotoBLAS: for each block of k (up to 1,024,
// so the layers' products run in one), op(B) is packed once into panels of 32
// columns, each a run of 32-bit bf16 pairs (B(2p, n), B(2p+1, n)); every 16
// rows of op(A) are packed into two micro-panels of 8 rows, pair-major (all 8
// rows of pair p together), each multiplied with every panel by an 8 x 32
// micro-tile: 16 zmm accumulators, one vdpbf16ps per row and half-panel per
// pair (two multiply-adds per lane into fp32).
// Packing rounds each operand element once; it is O(mk + kn) against the
// O(mnk) product, vectorised where the operand is activations (the rows).
#include "backend/cpu_bf16_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "backend/bf16.h"

namespace lt::cpu {
namespace {
constexpr int64_t kRows = 8;     // rows of a micro-tile
constexpr int64_t kPanel = 32;   // columns of a panel (two zmm of fp32)
constexpr int64_t kPairs = 512;  // pairs of k per block: one block for the layers' k up to 1024

#define LT_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// Pairs of bf16 in 32-bit lanes: the even k in the low 16 bits, the odd k in
// the high ones. Both rows are rounded by one instruction, then interleaved.
LT_BF16 inline __m512i pairs16(__m512 even, __m512 odd) {
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                              22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(odd, even));
}

LT_BF16 inline __m256i pairs8(__m256 even, __m256 odd) {
  const __m256i interleave = _mm256_set_epi16(15, 7, 14, 6, 13, 5, 12, 4, 11, 3, 10, 2, 9, 1, 8, 0);
  return _mm256_permutexvar_epi16(interleave, (__m256i)_mm256_cvtne2ps_pbh(odd, even));
}

inline uint32_t pair_of(float even, float odd) {
  return uint32_t(float_to_bf16(even)) | uint32_t(float_to_bf16(odd)) << 16;
}

inline __mmask16 first(int64_t count) { return count >= 16 ? 0xffff : __mmask16((1u << std::max<int64_t>(count, 0)) - 1); }
inline __mmask8 first8(int64_t count) { return count >= 8 ? 0xff : __mmask8((1u << std::max<int64_t>(count, 0)) - 1); }

// Rows k0 .. k0+kb-1 of op(B) (k x n) into panels: out[(j * pairs + p) * 32 + c]
// is the pair (B(k0+2p, 32j+c), B(k0+2p+1, 32j+c)), zero past n and kb.
LT_BF16 void pack_b(bool trans, const float* B, int64_t ldb, int64_t k0, int64_t kb, int64_t n, uint32_t* out) {
  const int64_t pairs = (kb + 1) / 2, panels = (n + kPanel - 1) / kPanel;
  if (trans) {  // B(kk, nn) = B[nn * ldb + kk]: the weights of y = x W^T, packed once per call
    std::fill(out, out + panels * pairs * kPanel, 0u);
    for (int64_t nn = 0; nn < n; ++nn) {
      const float* row = B + nn * ldb + k0;
      uint32_t* dst = out + (nn / kPanel) * pairs * kPanel + nn % kPanel;
      for (int64_t p = 0; p < pairs; ++p)
        dst[p * kPanel] = pair_of(row[2 * p], 2 * p + 1 < kb ? row[2 * p + 1] : 0.f);
    }
    return;
  }
  // B(kk, nn) = B[kk * ldb + nn]: two rows give 16 pairs per step.
  for (int64_t p = 0; p < pairs; ++p) {
    const float* even = B + (k0 + 2 * p) * ldb;
    const float* odd = 2 * p + 1 < kb ? even + ldb : nullptr;
    for (int64_t j = 0; j < panels; ++j)
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t c0 = j * kPanel + h * 16;
        const __mmask16 m = first(n - c0);
        const __m512 e = _mm512_maskz_loadu_ps(m, even + c0);
        const __m512 o = odd ? _mm512_maskz_loadu_ps(m, odd + c0) : _mm512_setzero_ps();
        _mm512_storeu_si512(out + (j * pairs + p) * kPanel + h * 16, pairs16(e, o));
      }
  }
}

// 8 x 8 transpose of 32-bit lanes: in[r][c] -> out[c][r].
LT_BF16 inline void transpose8(__m256i (&v)[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
    v[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
  }
}

// Rows i0 .. i0+rows-1 (rows <= 16) and k0 .. k0+kb-1 of op(A) = A^T as two
// micro-panels: out[(r / 8) * pairs * 8 + p * 8 + r % 8] = (A(i0+r, k0+2p),
// A(i0+r, k0+2p+1)), zero past rows and kb. Sixteen rows of op(A) are one
// cache line of each row of A (the weight gradients' dy^T, whose rows are
// far apart): packing eight would fetch every line twice.
LT_BF16 void pack_a_transposed(const float* A, int64_t lda, int64_t i0, int64_t rows, int64_t k0, int64_t kb,
                               uint32_t* out) {
  const int64_t pairs = (kb + 1) / 2;
  const __mmask16 m = first(rows);
  for (int64_t p = 0; p < pairs; ++p) {
    const float* even = A + (k0 + 2 * p) * lda + i0;
    const __m512 e = _mm512_maskz_loadu_ps(m, even);
    const __m512 o = 2 * p + 1 < kb ? _mm512_maskz_loadu_ps(m, even + lda) : _mm512_setzero_ps();
    const __m512i v = pairs16(e, o);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p * kRows), _mm512_maskz_extracti64x4_epi64(0xf, v, 0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (pairs + p) * kRows), _mm512_maskz_extracti64x4_epi64(0xf, v, 1));
  }
}

// Rows i0 .. i0+rows-1 (rows <= 8) and k0 .. k0+kb-1 of op(A) = A as
// out[p * 8 + r] = (A(i0+r, k0+2p), A(i0+r, k0+2p+1)), zero past rows and kb:
// each row gives 8 pairs per step, then an 8 x 8 transpose.
LT_BF16 void pack_a(const float* A, int64_t lda, int64_t i0, int64_t rows, int64_t k0, int64_t kb, uint32_t* out) {
  const int64_t pairs = (kb + 1) / 2;
  for (int64_t p = 0; p < pairs; p += 8) {
    const __mmask16 m = first(kb - 2 * p);
    __m256i v[8];
    for (int64_t r = 0; r < kRows; ++r)
      v[r] = r < rows ? (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, A + (i0 + r) * lda + k0 + 2 * p))
                      : _mm256_setzero_si256();
    transpose8(v);
    for (int64_t q = 0; q < std::min<int64_t>(8, pairs - p); ++q)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (p + q) * kRows), v[q]);
  }
}

// R rows x one panel of `cols` columns: C (+)= a b over `pairs` pairs.
template <int R>
LT_BF16 void tile(const uint32_t* a, const uint32_t* b, int64_t pairs, bool accumulate, float* c, int64_t ldc,
                  int64_t cols) {
  const __mmask16 m0 = first(cols), m1 = first(cols - 16);
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) {
    acc[r][0] = accumulate ? _mm512_maskz_loadu_ps(m0, c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = accumulate ? _mm512_maskz_loadu_ps(m1, c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(b + p * kPanel);
    const __m512bh w1 = (__m512bh)_mm512_loadu_si512(b + p * kPanel + 16);
    for (int r = 0; r < R; ++r) {
      const __m512bh x = (__m512bh)_mm512_set1_epi32(int(a[p * kRows + r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, w1);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc[r][1]);
  }
}

using TileFn = void (*)(const uint32_t*, const uint32_t*, int64_t, bool, float*, int64_t, int64_t);
constexpr TileFn kTiles[kRows + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>, tile<7>, tile<8>};
}  // namespace

void bf16_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* A, int64_t lda,
               const float* B, int64_t ldb, bool accumulate, float* C, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(C + i * ldc, C + i * ldc + n, 0.f);
    return;
  }
  const int64_t panels = (n + kPanel - 1) / kPanel;
  static thread_local std::vector<uint32_t> packed_b;  // grown to the largest block, then reused
  for (int64_t k0 = 0; k0 < k; k0 += 2 * kPairs) {
    const int64_t kb = std::min(2 * kPairs, k - k0), pairs = (kb + 1) / 2;
    if (int64_t(packed_b.size()) < panels * pairs * kPanel) packed_b.resize(panels * pairs * kPanel);
    pack_b(trans_b, B, ldb, k0, kb, n, packed_b.data());
    const uint32_t* b = packed_b.data();
    const bool acc = accumulate || k0 > 0;
    // Two micro-panels of 8 rows per iteration (see pack_a_transposed).
#pragma omp parallel for schedule(static)
    for (int64_t i0 = 0; i0 < m; i0 += 2 * kRows) {
      alignas(64) uint32_t a[2 * kPairs * kRows];
      const int64_t rows = std::min(2 * kRows, m - i0);
      if (trans_a)
        pack_a_transposed(A, lda, i0, rows, k0, kb, a);
      else
        for (int64_t h = 0; h * kRows < rows; ++h)
          pack_a(A, lda, i0 + h * kRows, std::min(kRows, rows - h * kRows), k0, kb, a + h * pairs * kRows);
      for (int64_t h = 0; h * kRows < rows; ++h)
        for (int64_t j = 0; j < panels; ++j)
          kTiles[std::min(kRows, rows - h * kRows)](a + h * pairs * kRows, b + j * pairs * kPanel, pairs, acc,
                                                    C + (i0 + h * kRows) * ldc + j * kPanel, ldc,
                                                    std::min(kPanel, n - j * kPanel));
    }
  }
}

}  // namespace lt::cpu
