// y = x W^T + b over weights packed once, for the small-batch products of the
// recurrent step (OpenBLAS repacks W at every call, a fifth of the step at
// batch 64). Panels of 32 outputs; a micro-tile holds 8 rows x 32 outputs in
// 16 zmm accumulators and streams its panel once per 8 rows.
//   fp32: panel[i] = W[n0..n0+31, i], one broadcast x[r, i] per input.
//   bf16: panel[p] = 32 pairs (W[n, 2p], W[n, 2p+1]); vdpbf16ps multiplies
//         the broadcast pair (x[r, 2p], x[r, 2p+1]) with them, two
//         multiply-adds per lane into fp32.
//   bf16 on AMX: the same panel read as tiles. 16 of its pair rows, one half
//         of the outputs each (a stride of 128 bytes), are TDPBF16PS's B;
//         16 rows of 32 inputs of x its A; a 32 x 32 block of y is four fp32
//         tiles. Each output row still depends on its input row alone, so a
//         row's bits do not depend on the batch it is in.
#include "ops/packed_linear.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backend/bf16.h"
#include "backend/device.h"
#include "common/error.h"

namespace lt {
namespace {
constexpr int64_t kPanel = 32;
constexpr int kRows = 8;

#define LT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define LT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// Masks of the valid outputs in the two halves of a panel with `cols` of them.
struct PanelMasks {
  __mmask16 lo, hi;
  explicit PanelMasks(int64_t cols)
      : lo(cols >= 16 ? 0xffff : __mmask16((1u << cols) - 1)),
        hi(cols >= 32 ? 0xffff : cols <= 16 ? 0 : __mmask16((1u << (cols - 16)) - 1)) {}
};

LT_AVX512 inline void store_tile(__m512 a0, __m512 a1, bool relu, float* y, const PanelMasks& m) {
  if (relu) {  // max(x, 0), NaN to 0 as max_ps does
    a0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a0, _mm512_setzero_ps(), _CMP_GT_OQ), a0);
    a1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a1, _mm512_setzero_ps(), _CMP_GT_OQ), a1);
  }
  _mm512_mask_storeu_ps(y, m.lo, a0);
  _mm512_mask_storeu_ps(y + 16, m.hi, a1);
}

// Every row's accumulators start at the panel's bias (or zero).
template <int R>
LT_AVX512 inline void start_tile(const float* bias, const PanelMasks& m, __m512 (&acc)[R][2]) {
  const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m.lo, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m.hi, bias + 16) : _mm512_setzero_ps();
  for (int r = 0; r < R; ++r) acc[r][0] = b0, acc[r][1] = b1;
}

// R (<= kRows) rows x one panel. x: rows of k fp32 inputs (fp32) or k packed
// bf16 input pairs (bf16).
template <int R>
LT_AVX512 void tile_f32(const void* xv, int64_t k, const void* panel, const float* bias, bool relu,
                        float* y, int64_t ldy, int64_t cols) {
  const float* x = static_cast<const float*>(xv);
  const float* w = static_cast<const float*>(panel);
  const PanelMasks m(cols);
  __m512 acc[R][2];
  start_tile<R>(bias, m, acc);
  for (int64_t i = 0; i < k; ++i) {
    const __m512 w0 = _mm512_loadu_ps(w + i * kPanel), w1 = _mm512_loadu_ps(w + i * kPanel + 16);
    for (int r = 0; r < R; ++r) {
      const __m512 xr = _mm512_set1_ps(x[r * k + i]);
      acc[r][0] = _mm512_fmadd_ps(xr, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(xr, w1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) store_tile(acc[r][0], acc[r][1], relu, y + r * ldy, m);
}

template <int R>
LT_AVX512_BF16 void tile_bf16(const void* xv, int64_t k, const void* panel, const float* bias,
                              bool relu, float* y, int64_t ldy, int64_t cols) {
  const uint32_t* x = static_cast<const uint32_t*>(xv);
  const __m512i* w = static_cast<const __m512i*>(panel);
  const PanelMasks m(cols);
  __m512 acc[R][2];
  start_tile<R>(bias, m, acc);
  for (int64_t p = 0; p < k; ++p) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(w + 2 * p);
    const __m512bh w1 = (__m512bh)_mm512_loadu_si512(w + 2 * p + 1);
    for (int r = 0; r < R; ++r) {
      const __m512bh xr = (__m512bh)_mm512_set1_epi32(int(x[r * k + p]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], xr, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], xr, w1);
    }
  }
  for (int r = 0; r < R; ++r) store_tile(acc[r][0], acc[r][1], relu, y + r * ldy, m);
}

#define LT_AMX __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))

// Eight tiles of 16 rows x 64 bytes: C 0-3, A 4-5, B 6-7.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) bytes_per_row[t] = 64, rows[t] = 16;
  }
};

// y rows [0, rows) of panel j from xb [padded rows (a multiple of 16), 16 n
// pairs] and the panel's 16 n pair rows of 128 bytes.
LT_AMX void amx_panel(const uint32_t* xb, int64_t padded, int64_t rows, int64_t pairs, const char* panel,
                      const float* bias, bool relu, float* y, int64_t ldy, int64_t cols) {
  alignas(64) float c[32 * 32];
  const PanelMasks m(cols);
  const size_t lda = size_t(pairs) * sizeof(uint32_t);
  const char* a = reinterpret_cast<const char*>(xb);
  for (int64_t r0 = 0; r0 < padded; r0 += 32) {
    const bool two = r0 + 16 < padded;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t p = 0; p < pairs; p += 16) {
      _tile_loadd(6, panel + p * 128, 128);
      _tile_loadd(7, panel + p * 128 + 64, 128);
      _tile_loadd(4, a + size_t(r0) * lda + size_t(p) * 4, lda);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      if (two) {
        _tile_loadd(5, a + size_t(r0 + 16) * lda + size_t(p) * 4, lda);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
    }
    _tile_stored(0, c, 128);
    _tile_stored(1, c + 16, 128);
    _tile_stored(2, c + 16 * 32, 128);
    _tile_stored(3, c + 16 * 32 + 16, 128);
    const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m.lo, bias) : _mm512_setzero_ps();
    const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m.hi, bias + 16) : _mm512_setzero_ps();
    for (int64_t r = r0; r < std::min(rows, r0 + 32); ++r) {
      const float* cr = c + (r - r0) * 32;
      store_tile(_mm512_add_ps(_mm512_load_ps(cr), b0), _mm512_add_ps(_mm512_load_ps(cr + 16), b1), relu,
                 y + r * ldy, m);
    }
  }
}

// One thread's share of the panels, [j0, j1). Its own function because clang
// 14 does not carry a function's target attribute into the body of an
// `omp parallel` region it outlines, and then cannot compile tile intrinsics.
LT_AMX void amx_panels(const uint32_t* xb, int64_t padded, int64_t rows, int64_t pairs, const char* w,
                       size_t panel_bytes, int64_t j0, int64_t j1, const float* bias, bool relu, float* y,
                       int64_t out) {
  if (j0 >= j1) return;
  const TileConfig config;  // a thread's tiles are its own
  _tile_loadconfig(&config);
  for (int64_t j = j0; j < j1; ++j)
    amx_panel(xb, padded, rows, pairs, w + size_t(j) * panel_bytes, bias ? bias + j * kPanel : nullptr, relu,
              y + j * kPanel, out, std::min(kPanel, out - j * kPanel));
  _tile_release();
}

void amx_forward(const uint32_t* xb, int64_t padded, int64_t rows, int64_t pairs, const char* w,
                 size_t panel_bytes, int64_t panels, const float* bias, bool relu, float* y, int64_t out) {
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    amx_panels(xb, padded, rows, pairs, w, panel_bytes, panels * t / n, panels * (t + 1) / n, bias, relu, y, out);
  }
}

using TileFn = void (*)(const void*, int64_t, const void*, const float*, bool, float*, int64_t, int64_t);
constexpr TileFn kF32Tiles[kRows + 1] = {nullptr, tile_f32<1>, tile_f32<2>, tile_f32<3>, tile_f32<4>,
                                         tile_f32<5>, tile_f32<6>, tile_f32<7>, tile_f32<8>};
constexpr TileFn kBf16Tiles[kRows + 1] = {nullptr, tile_bf16<1>, tile_bf16<2>, tile_bf16<3>, tile_bf16<4>,
                                          tile_bf16<5>, tile_bf16<6>, tile_bf16<7>, tile_bf16<8>};

// x [rows, in] fp32 -> [rows, pairs] of bf16 pairs (odd in: a zero pads the last).
LT_AVX512_BF16 void round_rows(const float* x, int64_t rows, int64_t in, uint32_t* xb, int64_t pairs) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * in;
    uint16_t* dst = reinterpret_cast<uint16_t*>(xb + r * pairs);
    int64_t i = 0;
    for (; i + 16 <= in; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + i)));
    for (; i < in; ++i) dst[i] = float_to_bf16(src[i]);
    if (in % 2) dst[in] = 0;
  }
}
}  // namespace

PackedLinear::PackedLinear(const Tensor& W, Products products) : products_(products) {
  check(W.device() == Device::cpu && W.ndim() == 2,
        "packed linear weights must be a 2-D CPU tensor, got " + shape_str(W.shape()));
  check(products != Products::tf32, "tf32 products are a CUDA precision; the CPU packs fp32 or bf16");
  if (products == Products::bf16)
    check(cpu_has_bf16(), "bf16 products need a CPU with AVX512_BF16 (this one lacks it)");
  else
    check(cpu_has_avx512(), "packed fp32 products need a CPU with AVX-512 (this one lacks it)");
  out_ = W.dim(0), in_ = W.dim(1);
  const int64_t panels = (out_ + kPanel - 1) / kPanel;
  // Zeros where a panel or a pair runs past W: pack() writes only W's values.
  if (products == Products::fp32)
    packed_ = Tensor::zeros({panels * in_ * kPanel});
  else
    packed_ = Tensor::zeros({panels * ((in_ + 1) / 2) * kPanel}, Device::cpu, DType::i32);
  pack(W.data());
}

void PackedLinear::repack(const Tensor& W) {
  check(W.device() == Device::cpu && W.ndim() == 2 && W.dim(0) == out_ && W.dim(1) == in_,
        "packed linear weights to repack must be [" + std::to_string(out_) + ", " + std::to_string(in_) +
            "] on the CPU, got " + shape_str(W.shape()));
  pack(W.data());
}

void PackedLinear::pack(const float* w) {
  if (products_ == Products::fp32) {
    float* p = packed_.data();
    for (int64_t n = 0; n < out_; ++n)
      for (int64_t i = 0; i < in_; ++i) p[((n / kPanel) * in_ + i) * kPanel + n % kPanel] = w[n * in_ + i];
    return;
  }
  const int64_t pairs = (in_ + 1) / 2;
  uint16_t* p = reinterpret_cast<uint16_t*>(packed_.data_i32());
  for (int64_t n = 0; n < out_; ++n)
    for (int64_t i = 0; i < in_; ++i)
      p[(((n / kPanel) * pairs + i / 2) * kPanel + n % kPanel) * 2 + i % 2] = float_to_bf16(w[n * in_ + i]);
}

int64_t PackedLinear::scratch_numel(int64_t rows) const {
  if (products_ != Products::bf16) return 0;
  const int64_t k = (in_ + 1) / 2;
  const bool amx = k % 16 == 0 && cpu_has_amx();
  return (amx ? (rows + 15) / 16 * 16 : rows) * k;
}

void PackedLinear::forward(const Tensor& x, const Tensor& b, Tensor& y, bool relu, Tensor* scratch) const {
  // Runs for every product of every step: messages are built only on failure.
  if (x.device() != Device::cpu || x.ndim() < 1 || x.dim(x.ndim() - 1) != in_)
    throw Error("packed linear input must be [..., " + std::to_string(in_) + "] on the CPU, got " +
                shape_str(x.shape()));
  const int64_t rows = x.numel() / in_;
  if (y.device() != Device::cpu || y.numel() != rows * out_ || y.dim(y.ndim() - 1) != out_)
    throw Error("packed linear output must be [..., " + std::to_string(out_) + "] for " + std::to_string(rows) +
                " rows, got " + shape_str(y.shape()));
  if (b.defined() && b.numel() != out_)
    throw Error("packed linear bias must have " + std::to_string(out_) + " values, got " + std::to_string(b.numel()));
  const int64_t panels = (out_ + kPanel - 1) / kPanel;
  const bool bf16 = products_ == Products::bf16;
  const int64_t k = bf16 ? (in_ + 1) / 2 : in_;  // steps of the inner loop
  const void* xs = x.data();
  // AMX takes 16 rows and 32 inputs at a time: rows padded with zeros.
  const bool amx = bf16 && k % 16 == 0 && cpu_has_amx();
  const int64_t padded = amx ? (rows + 15) / 16 * 16 : rows;
  if (bf16) {
    // Per thread: a state pool runs products of its row slices on several threads at once.
    thread_local Tensor own;
    Tensor& buffer = scratch ? *scratch : own;
    if (!buffer.defined() || buffer.numel() < padded * k) buffer = Tensor::empty({padded * k}, Device::cpu, DType::i32);
    uint32_t* xb = reinterpret_cast<uint32_t*>(buffer.data_i32());
    round_rows(x.data(), rows, in_, xb, k);
    std::fill(xb + rows * k, xb + padded * k, 0u);
    xs = xb;
  }
  const TileFn* tiles = bf16 ? kBf16Tiles : kF32Tiles;
  const size_t elem = bf16 ? sizeof(uint32_t) : sizeof(float);
  const char* w = bf16 ? reinterpret_cast<const char*>(packed_.data_i32())
                       : reinterpret_cast<const char*>(packed_.data());
  const size_t panel_bytes = size_t(k * kPanel) * (bf16 ? 2 * sizeof(uint16_t) : sizeof(float));
  const float* bias = b.defined() ? b.data() : nullptr;
  float* yp = y.data();
  if (amx)
    return amx_forward(static_cast<const uint32_t*>(xs), padded, rows, k, w, panel_bytes, panels, bias, relu, yp, out_);
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < panels; ++j) {
    const int64_t cols = std::min(kPanel, out_ - j * kPanel);
    for (int64_t r = 0; r < rows; r += kRows) {
      const int64_t n = std::min<int64_t>(kRows, rows - r);
      tiles[n](static_cast<const char*>(xs) + size_t(r * k) * elem, k, w + size_t(j) * panel_bytes,
               bias ? bias + j * kPanel : nullptr, relu, yp + r * out_ + j * kPanel, out_, cols);
    }
  }
}

}  // namespace lt
