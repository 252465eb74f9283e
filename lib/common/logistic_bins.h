// The per-element math of the discretized mixture of logistics, once for the
// CPU (mixture_of_logistics.cpp) and the GPU (kernels/heads.cu): the mass of
// a byte's bin under one logistic, its derivatives, and the draw of a byte.
// Both sides run it in double, so that they score and sample alike; how a row
// combines its components stays with each side (an array of bins on the CPU,
// an online logsumexp per thread on the GPU).
// std::max is not callable on the device: its ternary stands in its place.
#pragma once
#include <cmath>
#include <cstdint>

#include "common/host_device.h"
#include "common/random.h"

namespace lt {
// The discretized mixture of logistics' bytes, and the floor of its log-scales
// (torch.clamp in PixelCNN++).
constexpr int kMolNumClasses = 256;
constexpr double kMolLogScaleMin = -7.0;
}  // namespace lt

namespace lt::mol {

LT_HOST_DEVICE inline double sigmoid(double x) {
  if (x >= 0) return 1 / (1 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1 + e);
}
LT_HOST_DEVICE inline double softplus(double x) {
  return (x < 0.0 ? 0.0 : x) + std::log1p(std::exp(-std::fabs(x)));
}

// The byte b as the value y = b / 255 * 2 - 1 in [-1, 1].
LT_HOST_DEVICE inline double target_value(int32_t byte) { return byte / 255.0 * 2 - 1; }

// log P(bin of y | one logistic component), with its derivatives with respect
// to the mean and to the raw (unclamped) log-scale.
struct BinLogProb {
  double value, d_mean, d_log_scale;
};

LT_HOST_DEVICE inline BinLogProb bin_log_prob(double y, double mean, double raw_log_scale) {
  const double half_bin = 1.0 / (kMolNumClasses - 1);
  const bool clamped = raw_log_scale < kMolLogScaleMin;  // torch.clamp: no gradient below
  const double log_scale = clamped ? kMolLogScaleMin : raw_log_scale;
  const double inv_scale = std::exp(-log_scale), centered = y - mean;
  const double plus_in = inv_scale * (centered + half_bin);
  const double min_in = inv_scale * (centered - half_bin);
  const double mid_in = inv_scale * centered;
  // value and its partial derivatives in plus_in, min_in, mid_in and log_scale itself.
  double value, g_plus = 0, g_min = 0, g_mid = 0, g_log_scale = 0;
  if (y < -0.999) {  // byte 0: all the mass below the bin's upper edge
    value = plus_in - softplus(plus_in);
    g_plus = sigmoid(-plus_in);
  } else if (y > 0.999) {  // byte 255: all the mass above the bin's lower edge
    value = -softplus(min_in);
    g_min = -sigmoid(min_in);
  } else {
    const double cdf_plus = sigmoid(plus_in), cdf_min = sigmoid(min_in);
    const double cdf_delta = cdf_plus - cdf_min;
    if (cdf_delta > 1e-5) {  // the reference's clamp at 1e-12 cannot bind here
      value = std::log(cdf_delta);
      g_plus = cdf_plus * sigmoid(-plus_in) / cdf_delta;
      g_min = -cdf_min * sigmoid(-min_in) / cdf_delta;
    } else {  // density at the bin centre times the bin width 2/255
      value = mid_in - log_scale - 2 * softplus(mid_in) - std::log((kMolNumClasses - 1) / 2.0);
      g_mid = 1 - 2 * sigmoid(mid_in);
      g_log_scale = -1;
    }
  }
  // Each *_in is inv_scale * (y - mean + const): d/d mean = -inv_scale and,
  // as d inv_scale / d log_scale = -inv_scale, d/d log_scale = -*_in.
  BinLogProb r;
  r.value = value;
  r.d_mean = -inv_scale * (g_plus + g_min + g_mid);
  r.d_log_scale = clamped ? 0 : g_log_scale - (g_plus * plus_in + g_min * min_in + g_mid * mid_in);
  return r;
}

// log sum_k exp(x[k]) in double.
template <typename Index>
LT_HOST_DEVICE inline double log_sum_exp(const float* x, Index n) {
  double m = x[0];
  for (Index i = 1; i < n; ++i) m = m < double(x[i]) ? double(x[i]) : m;
  double s = 0;
  for (Index i = 0; i < n; ++i) s += std::exp(x[i] - m);
  return m + std::log(s);
}

// Inverse CDF of softmax(x[0..n)) at u, exponentials summed in index order,
// so that both backends pick the same component (and the GPU the same class).
template <typename Index>
LT_HOST_DEVICE inline Index softmax_inverse_cdf(const float* x, Index n, double u) {
  double m = x[0];
  for (Index i = 1; i < n; ++i) m = m < double(x[i]) ? double(x[i]) : m;
  double z = 0;
  for (Index i = 0; i < n; ++i) z += std::exp(x[i] - m);
  const double target = u * z;
  double acc = 0;
  for (Index i = 0; i < n; ++i) {
    acc += std::exp(x[i] - m);
    if (target < acc) return i;
  }
  return n - 1;
}

// The byte whose bin [y - 1/255, y + 1/255) holds the logistic draw at u in
// (0, 1) (clamped scale, as the loss): exactly the event the loss scores, up
// to its density fallback for near-empty bins.
LT_HOST_DEVICE inline int32_t sample_byte(float mean, float raw_log_scale, double u) {
  const double log_scale = double(raw_log_scale) < kMolLogScaleMin ? kMolLogScaleMin : double(raw_log_scale);
  const double logistic = std::log(u) - std::log(1 - u);
  // Explicit fma: neither compiler may contract these differently.
  const double x = std::fma(std::exp(log_scale), logistic, double(mean));
  const double bin = std::nearbyint(std::fma(x, 127.5, 127.5));  // (x + 1) / 2 * 255, half to even
  return int32_t(std::fmin(std::fmax(bin, 0.0), 255.0));
}

// What a row draws at decoding step `step` under `seed`, on either backend:
// a class of softmax(logits[0..n)) at the row's uniform 0; for a mixture of K
// logistics laid out [logits | means | log-scales], the byte its drawn
// component draws at the row's uniform 1.
template <typename Index>
LT_HOST_DEVICE inline Index draw_class(const float* logits, Index n, uint64_t seed, int64_t step, int64_t row) {
  return softmax_inverse_cdf(logits, n, sample_uniform(seed, step, row, 0));
}
template <typename Index>
LT_HOST_DEVICE inline int32_t draw_byte(const float* p, Index K, uint64_t seed, int64_t step, int64_t row) {
  const Index pick = draw_class(p, K, seed, step, row);
  return sample_byte(p[K + pick], p[2 * K + pick], sample_uniform(seed, step, row, 1));
}

}  // namespace lt::mol
