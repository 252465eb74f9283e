// Depthwise convolution over positions (ops/ops.h): each channel its own
// kernel of K taps, centred or causal; reads outside a row are zeros. Rows are
// positions of C contiguous channels, so the inner loops run over channels
// with the taps transposed to [K, C].
#include <algorithm>
#include <vector>

#include "backend/dispatch.h"
#include "ops/ops.h"

namespace lt {
namespace {

struct ConvShape {
  int64_t B, L, C, K, P;  // P taps before the output's position: (K - 1) / 2 centred, K - 1 causal
};

// A stream's step checks every layer: the messages are built only when they throw.
ConvShape conv_shape(const Tensor& x, const Tensor& w, const Tensor& lengths, bool causal, const char* what) {
  if (x.ndim() != 3) throw Error(std::string(what) + ": x must be [B, L, C], got " + shape_str(x.shape()));
  const int64_t C = x.dim(2);
  if (!(w.ndim() == 2 && w.dim(0) == C && w.dim(1) >= 1 && (causal || w.dim(1) % 2 == 1)))
    throw Error(std::string(what) + ": w must be [" + std::to_string(C) + ", K]" + (causal ? "" : " with K odd") +
                ", got " + shape_str(w.shape()));
  if (lengths.defined() && !(lengths.dtype() == DType::i32 && lengths.ndim() == 1 && lengths.dim(0) == x.dim(0)))
    throw Error(std::string(what) + ": lengths must be int32 [" + std::to_string(x.dim(0)) + "]");
  const int64_t K = w.dim(1);
  return {x.dim(0), x.dim(1), C, K, causal ? K - 1 : (K - 1) / 2};
}

// Row b's length from lengths (nullptr: every row is whole).
int64_t row_length(const int32_t* lengths, const ConvShape& s, int64_t b) {
  return lengths ? std::clamp<int64_t>(lengths[b], 0, s.L) : s.L;
}

// w [C, K] as [K, C], in a buffer that only grows.
const float* taps_by_position(const Tensor& w, const ConvShape& s) {
  thread_local std::vector<float> wt;
  wt.resize(size_t(s.K * s.C));
  const float* wp = w.data();
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t k = 0; k < s.K; ++k) wt[size_t(k * s.C + c)] = wp[c * s.K + k];
  return wt.data();
}

}  // namespace

void depthwise_conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& lengths, bool causal,
                            Tensor& y) {
  const ConvShape s = conv_shape(x, w, lengths, causal, "depthwise_conv_forward");
  check(bias.numel() == s.C && y.shape() == x.shape(), "depthwise_conv_forward: bias must be [C] and y as x");
  const Device dev = common_device({&x, &w, &bias, &y}, "depthwise_conv_forward");
  const int32_t* lens = lengths.defined() ? lengths.data_i32() : nullptr;
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::depthwise_conv_forward(x.data(), w.data(), bias.data(), lens, y.data(), s.B, s.L, s.C, s.K, s.P));
  const float* wt = taps_by_position(w, s);
  const float *xp = x.data(), *bp = bias.data();
  float* yp = y.data();
#pragma omp parallel for collapse(2) schedule(static) if (s.B * s.L * s.C * s.K >= (1 << 16))
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.L; ++t) {
      const int64_t n = row_length(lens, s, b);
      float* out = yp + (b * s.L + t) * s.C;
      if (t >= n) {
        std::fill(out, out + s.C, 0.f);
        continue;
      }
      std::copy(bp, bp + s.C, out);
      for (int64_t k = std::max<int64_t>(0, s.P - t); k < s.K && t + k - s.P < n; ++k) {
        const float* in = xp + (b * s.L + t + k - s.P) * s.C;
        const float* tap = wt + k * s.C;
        for (int64_t c = 0; c < s.C; ++c) out[c] += tap[c] * in[c];
      }
    }
}

void depthwise_conv_backward(const Tensor& x, const Tensor& w, const Tensor& lengths, bool causal, const Tensor& dy,
                             Tensor& dx, Tensor& dw, Tensor& dbias) {
  const ConvShape s = conv_shape(x, w, lengths, causal, "depthwise_conv_backward");
  check(dy.shape() == x.shape() && dx.shape() == x.shape() && dw.shape() == w.shape() && dbias.numel() == s.C,
        "depthwise_conv_backward: dy and dx must be as x, dw as w, dbias [C]");
  const Device dev = common_device({&x, &w, &dy, &dx, &dw, &dbias}, "depthwise_conv_backward");
  const int32_t* lens = lengths.defined() ? lengths.data_i32() : nullptr;
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::depthwise_conv_backward(x.data(), w.data(), lens, dy.data(), dx.data(), dw.data(), dbias.data(),
                                             s.B, s.L, s.C, s.K, s.P));
  const float* wt = taps_by_position(w, s);
  const float *xp = x.data(), *dyp = dy.data();
  float *dxp = dx.data(), *dwp = dw.data(), *dbp = dbias.data();
  const bool parallel = s.B * s.L * s.C * s.K >= (1 << 16);
  // dx[t] = sum_k w[k] dy[t - k + P] over the outputs inside the row.
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.L; ++t) {
      const int64_t n = row_length(lens, s, b);
      float* out = dxp + (b * s.L + t) * s.C;
      std::fill(out, out + s.C, 0.f);
      if (t >= n) continue;
      for (int64_t k = std::max<int64_t>(0, t + s.P - (n - 1)); k < s.K && t - k + s.P >= 0; ++k) {
        const float* g = dyp + (b * s.L + t - k + s.P) * s.C;
        const float* tap = wt + k * s.C;
        for (int64_t c = 0; c < s.C; ++c) out[c] += tap[c] * g[c];
      }
    }
  // dw and dbias: each thread its own block of channels, summed over every
  // position into [K, block] taps that vectorise, then added to dw [C, K].
  constexpr int64_t kBlock = 64;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t c0 = 0; c0 < s.C; c0 += kBlock) {
    const int64_t c1 = std::min(s.C, c0 + kBlock);
    thread_local std::vector<float> acc;
    acc.assign(size_t((s.K + 1) * kBlock), 0.f);  // the taps, then the bias
    float* db = acc.data() + s.K * kBlock;
    for (int64_t b = 0; b < s.B; ++b) {
      const int64_t n = row_length(lens, s, b);
      for (int64_t t = 0; t < n; ++t) {
        const float* g = dyp + (b * s.L + t) * s.C;
        for (int64_t c = c0; c < c1; ++c) db[c - c0] += g[c];
        for (int64_t k = std::max<int64_t>(0, s.P - t); k < s.K && t + k - s.P < n; ++k) {
          const float* in = xp + (b * s.L + t + k - s.P) * s.C;
          float* tap = acc.data() + k * kBlock;
          for (int64_t c = c0; c < c1; ++c) tap[c - c0] += g[c] * in[c];
        }
      }
    }
    for (int64_t c = c0; c < c1; ++c) {
      dbp[c] += db[c - c0];
      for (int64_t k = 0; k < s.K; ++k) dwp[c * s.K + k] += acc[size_t(k * kBlock + c - c0)];
    }
  }
}

void depthwise_conv_continue(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& window, Tensor& y,
                             const int64_t* rows) {
  const ConvShape s = conv_shape(x, w, Tensor(), /*causal=*/true, "depthwise_conv_continue");
  check(bias.numel() == s.C && y.shape() == x.shape(), "depthwise_conv_continue: bias must be [C] and y as x");
  const int64_t R = rows ? window.dim(0) : s.B;
  if (window.ndim() != 3 || window.dim(0) != R || window.dim(1) != s.K - 1 || window.dim(2) != s.C)
    throw Error("depthwise_conv_continue: window must be [" + std::to_string(R) + ", " + std::to_string(s.K - 1) +
                ", " + std::to_string(s.C) + "], got " + shape_str(window.shape()));
  const Device dev = common_device({&x, &w, &bias, &window, &y}, "depthwise_conv_continue");
  if (rows && dev == Device::cpu) {  // a GPU's map is in device memory, checked by its caller
    for (int64_t b = 0; b < s.B; ++b)
      if (rows[b] < 0 || rows[b] >= R)
        throw Error("depthwise_conv_continue: row " + std::to_string(rows[b]) + " outside the window's " +
                    std::to_string(R));
  }
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::depthwise_conv_continue(x.data(), w.data(), bias.data(), window.data(), y.data(), s.B, s.L, s.C,
                                             s.K, rows));
  const float* wt = taps_by_position(w, s);
  const float *xp = x.data(), *bp = bias.data();
  float *winp = window.data(), *yp = y.data();
  const int64_t W = s.K - 1;
  // Input i of window ++ x for batch element b: the window's first (row
  // rows[b] of a pool's), then the chunk's.
  auto input = [&](int64_t b, int64_t i) {
    return i < W ? winp + ((rows ? rows[b] : b) * W + i) * s.C : xp + (b * s.L + i - W) * s.C;
  };
  auto outputs = [&](int64_t b, int64_t t) {
    float* out = yp + (b * s.L + t) * s.C;
    std::copy(bp, bp + s.C, out);
    for (int64_t k = 0; k < s.K; ++k) {
      const float* in = input(b, t + k);  // position t + k - W of x
      const float* tap = wt + k * s.C;
      for (int64_t c = 0; c < s.C; ++c) out[c] += tap[c] * in[c];
    }
  };
  // Slot j takes input L + j, which comes after j: ascending j reads no slot already replaced.
  auto slide = [&](int64_t b) {
    for (int64_t j = 0; j < W; ++j) std::copy_n(input(b, s.L + j), s.C, winp + ((rows ? rows[b] : b) * W + j) * s.C);
  };
  if (rows) {  // a pool's: in order on this thread, each element's window moved on before the next reads it
    for (int64_t b = 0; b < s.B; ++b) {
      for (int64_t t = 0; t < s.L; ++t) outputs(b, t);
      slide(b);
    }
    return;
  }
#pragma omp parallel for collapse(2) schedule(static) if (s.B * s.L * s.C * s.K >= (1 << 16))
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t t = 0; t < s.L; ++t) outputs(b, t);
  for (int64_t b = 0; b < s.B; ++b) slide(b);
}

}  // namespace lt
