// y = x W^T + b with bf16 operands and fp32 accumulation on AVX512_BF16 CPUs.
// Used by the recurrent step when generation opts into bf16: at batch 64 the
// fp32 path spends a fifth of its time in OpenBLAS repacking the weights at
// every call; here the weights are packed once, in half the bytes, and
// vdpbf16ps does two multiply-adds per lane.
//
// Packed layout: panels of 32 outputs; within a panel, for each pair of
// inputs p, 32 x (W[n, 2p], W[n, 2p+1]) = two zmm registers, so the kernel
// broadcasts the pair (x[m, 2p], x[m, 2p+1]) and multiplies it with both.
#include <immintrin.h>

#include <cstring>

#include "lt/error.h"
#include "lt/linear_bf16.h"

namespace lt {
namespace {
constexpr int64_t kPanel = 32;  // outputs per panel (two zmm of fp32 accumulators)
constexpr int kRows = 8;        // rows per micro-tile: 16 accumulators

#define LT_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// Round to nearest even, as vcvtneps2bf16 does (NaN kept a NaN).
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// x [rows, in] fp32 -> [rows, pairs] of packed bf16 pairs (odd in: zero pad).
LT_BF16_TARGET void convert_rows(const float* x, int64_t rows, int64_t in, uint32_t* xb, int64_t pairs) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * in;
    uint16_t* dst = reinterpret_cast<uint16_t*>(xb + r * pairs);
    int64_t i = 0;
    for (; i + 16 <= in; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                          (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + i)));
    for (; i < in; ++i) dst[i] = to_bf16(src[i]);
    if (in % 2) dst[in] = 0;
  }
}

// rows (<= kRows) x 32 outputs of one panel, over all input pairs.
template <int R>
LT_BF16_TARGET void tile(const uint32_t* xb, int64_t pairs, const uint16_t* panel, const float* bias,
                         bool relu, float* y, int64_t ldy, int64_t cols) {
  __m512 acc[R][2];
  const __mmask16 m0 = cols >= 16 ? 0xffff : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xffff : cols <= 16 ? 0 : __mmask16((1u << (cols - 16)) - 1);
  const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int r = 0; r < R; ++r) acc[r][0] = b0, acc[r][1] = b1;
  const __m512i* w = reinterpret_cast<const __m512i*>(panel);
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(w + 2 * p);
    const __m512bh w1 = (__m512bh)_mm512_loadu_si512(w + 2 * p + 1);
    for (int r = 0; r < R; ++r) {
      const __m512bh xr = (__m512bh)_mm512_set1_epi32(int(xb[r * pairs + p]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], xr, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], xr, w1);
    }
  }
  for (int r = 0; r < R; ++r) {
    __m512 a0 = acc[r][0], a1 = acc[r][1];
    if (relu) {  // keeps x > 0: max(x, 0), NaN to 0 as max_ps does
      a0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a0, _mm512_setzero_ps(), _CMP_GT_OQ), a0);
      a1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a1, _mm512_setzero_ps(), _CMP_GT_OQ), a1);
    }
    _mm512_mask_storeu_ps(y + r * ldy, m0, a0);
    _mm512_mask_storeu_ps(y + r * ldy + 16, m1, a1);
  }
}

using TileFn = void (*)(const uint32_t*, int64_t, const uint16_t*, const float*, bool, float*, int64_t,
                        int64_t);
constexpr TileFn kTiles[kRows + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>,
                                      tile<5>, tile<6>, tile<7>, tile<8>};
}  // namespace

bool cpu_has_bf16() {
  static const bool has = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  return has;
}

LinearBf16::LinearBf16(const Tensor& W) {
  check(W.device() == Device::cpu && W.ndim() == 2, "bf16 linear weights must be a 2-D CPU tensor, got " +
                                                        shape_str(W.shape()));
  check(cpu_has_bf16(), "bf16 products need a CPU with AVX512_BF16 (this one lacks it)");
  out_ = W.dim(0), in_ = W.dim(1);
  const int64_t pairs = (in_ + 1) / 2, panels = (out_ + kPanel - 1) / kPanel;
  packed_.assign(size_t(panels * pairs * kPanel * 2), 0);
  const float* w = W.data();
  for (int64_t j = 0; j < panels; ++j)
    for (int64_t n = 0; n < kPanel && j * kPanel + n < out_; ++n)
      for (int64_t i = 0; i < in_; ++i)
        packed_[size_t(((j * pairs + i / 2) * kPanel + n) * 2 + i % 2)] = to_bf16(w[(j * kPanel + n) * in_ + i]);
}

void LinearBf16::forward(const Tensor& x, const Tensor& b, Tensor& y, bool relu) const {
  check(x.device() == Device::cpu && x.ndim() >= 1 && x.dim(x.ndim() - 1) == in_,
        "bf16 linear input must be [..., " + std::to_string(in_) + "] on the CPU, got " + shape_str(x.shape()));
  const int64_t rows = x.numel() / in_;
  check(y.numel() == rows * out_ && y.dim(y.ndim() - 1) == out_,
        "bf16 linear output must be [..., " + std::to_string(out_) + "], got " + shape_str(y.shape()));
  check(!b.defined() || b.numel() == out_, "bf16 linear bias must have " + std::to_string(out_) + " values");
  const int64_t pairs = (in_ + 1) / 2, panels = (out_ + kPanel - 1) / kPanel;
  if (int64_t(xb_.size()) < rows * pairs) xb_.resize(size_t(rows * pairs));
  convert_rows(x.data(), rows, in_, xb_.data(), pairs);
  const float* bias = b.defined() ? b.data() : nullptr;
  float* yp = y.data();
  const uint32_t* xb = xb_.data();
  const uint16_t* w = packed_.data();
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < panels; ++j) {
    const int64_t cols = std::min(kPanel, out_ - j * kPanel);
    for (int64_t r = 0; r < rows; r += kRows) {
      const int64_t n = std::min<int64_t>(kRows, rows - r);
      kTiles[n](xb + r * pairs, pairs, w + j * pairs * kPanel * 2, bias ? bias + j * kPanel : nullptr, relu,
                yp + r * out_ + j * kPanel, out_, cols);
    }
  }
}

}  // namespace lt
