// Discretized mixture of logistics, exactly the reference's
// discretized_mix_logistic_loss (idiap/linear-transformer-experiments,
// image-generation/utils.py, itself PixelCNN++'s): the same clamp, the same
// bin edges and the same four cases, including the density fallback for bins
// with almost no mass. The per-position math runs in double: R * K terms are
// few next to the model, and the bin mass sigmoid(a) - sigmoid(b) cancels.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/dispatch.h"
#include "lt/heads.h"

namespace lt {
namespace {

struct MolDims {
  int64_t rows, K;
};

MolDims mol_dims(const Tensor& params, const Tensor& per_row, const char* what,
                 const char* per_row_name) {
  check(params.defined() && params.dim(-1) > 0 && params.dim(-1) % 3 == 0,
        std::string(what) + ": params " + shape_str(params.shape()) +
            " must end in 3K values (K logits, K means, K log-scales)");
  MolDims d{params.numel() / params.dim(-1), params.dim(-1) / 3};
  check(per_row.defined() && per_row.numel() == d.rows,
        std::string(what) + ": " + per_row_name + " " + shape_str(per_row.shape()) +
            " needs one entry per row of params " + shape_str(params.shape()) + " (" +
            std::to_string(d.rows) + " rows)");
  return d;
}

void check_bytes(const int32_t* targets, int64_t rows, const char* what) {
  for (int64_t r = 0; r < rows; ++r)
    check(targets[r] >= 0 && targets[r] < kMolNumClasses,
          std::string(what) + ": target " + std::to_string(targets[r]) + " at row " +
              std::to_string(r) + " is not a byte (0..255)");
}

double sigmoid(double x) {
  if (x >= 0) return 1 / (1 + std::exp(-x));
  double e = std::exp(x);
  return e / (1 + e);
}
double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))); }

// log P(bin of y | one logistic component), with its derivatives with respect
// to the mean and to the raw (unclamped) log-scale.
struct BinLogProb {
  double value, d_mean, d_log_scale;
};

BinLogProb bin_log_prob(double y, double mean, double raw_log_scale) {
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

double log_sum_exp(const float* x, int64_t n) {
  double m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max(m, double(x[i]));
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  return m + std::log(s);
}

double target_value(int32_t byte) { return byte / 255.0 * 2 - 1; }

// Fills bins[k] for one row and returns its nll = -logsumexp_k(log pi_k + log P_k).
double row_nll(const float* p, int64_t K, int32_t byte, BinLogProb* bins) {
  const double y = target_value(byte), lse_logits = log_sum_exp(p, K);
  double m = -INFINITY;
  for (int64_t k = 0; k < K; ++k) {
    bins[k] = bin_log_prob(y, p[K + k], p[2 * K + k]);
    bins[k].value += p[k] - lse_logits;  // log pi_k + log P_k
    m = std::max(m, bins[k].value);
  }
  double s = 0;
  for (int64_t k = 0; k < K; ++k) s += std::exp(bins[k].value - m);
  return -(m + std::log(s));
}

void mol_forward_rows(const MolDims& d, Device dev, const float* params, const int32_t* targets,
                      float* nll, double& sum) {
  if (dev == Device::cuda) LT_ON_CUDA(sum = cuda::mol_loss_forward(params, targets, nll, d.rows, d.K));
  check_bytes(targets, d.rows, "mol_loss_forward");
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    std::vector<BinLogProb> bins(d.K);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < d.rows; ++r) {
      double l = row_nll(params + r * 3 * d.K, d.K, targets[r], bins.data());
      nll[r] = float(l);
      total += l;
    }
  }
  sum = total;
}

}  // namespace

double mol_loss_forward(const Tensor& params, const Tensor& targets, Tensor& nll) {
  MolDims d = mol_dims(params, targets, "mol_loss_forward", "targets");
  mol_dims(params, nll, "mol_loss_forward", "nll");
  Device dev = common_device({&params, &targets, &nll}, "mol_loss_forward");
  double sum = 0;
  mol_forward_rows(d, dev, params.data(), targets.data_i32(), nll.data(), sum);
  return sum / double(d.rows);
}

void mol_loss_backward(const Tensor& params, const Tensor& targets, float scale, Tensor& dparams) {
  MolDims d = mol_dims(params, targets, "mol_loss_backward", "targets");
  check_shape(dparams, params.shape(), "mol_loss_backward dparams");
  Device dev = common_device({&params, &targets, &dparams}, "mol_loss_backward");
  const float* pp = params.data();
  const int32_t* tp = targets.data_i32();
  float* gp = dparams.data();
  if (dev == Device::cuda) LT_ON_CUDA(cuda::mol_loss_backward(pp, tp, scale, gp, d.rows, d.K));

  check_bytes(tp, d.rows, "mol_loss_backward");
  const int64_t K = d.K;
#pragma omp parallel
  {
    std::vector<BinLogProb> bins(K);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < d.rows; ++r) {
      const float* p = pp + r * 3 * K;
      float* g = gp + r * 3 * K;
      const double nll = row_nll(p, K, tp[r], bins.data()), lse_logits = log_sum_exp(p, K);
      // nll = -logsumexp_k(l_k): d nll / d l_k = -w_k, w the posterior over components;
      // l_k holds log_softmax(logits)_k, whose gradient turns -w into pi - w.
      for (int64_t k = 0; k < K; ++k) {
        const double w = std::exp(bins[k].value + nll), pi = std::exp(p[k] - lse_logits);
        g[k] = float(scale * (pi - w));
        g[K + k] = float(-scale * w * bins[k].d_mean);
        g[2 * K + k] = float(-scale * w * bins[k].d_log_scale);
      }
    }
  }
}

void mol_sample(const Tensor& params, uint64_t seed, int64_t step, Tensor& out) {
  MolDims d = mol_dims(params, out, "mol_sample", "out");
  Device dev = common_device({&params, &out}, "mol_sample");
  const float* pp = params.data();
  int32_t* op = out.data_i32();
  if (dev == Device::cuda) LT_ON_CUDA(cuda::mol_sample(pp, seed, step, op, d.rows, d.K));

  // The reference's sample_mol draws scales elu(x) + 1.0001, a different
  // distribution from the one its loss models; we sample the modelled one: the
  // byte whose bin [y - 1/255, y + 1/255) holds a logistic draw is exactly the
  // event the loss scores (up to its density fallback for near-empty bins).
  const int64_t K = d.K;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < d.rows; ++b) {
    const float* p = pp + b * 3 * K;
    const double u_component = sample_uniform(seed, step, b, 0);
    const double u_logistic = sample_uniform(seed, step, b, 1);
    // Inverse CDF of softmax(logits), accumulated in double in index order
    // (kernels/heads.cu does the same, so both backends pick the same k).
    double m = p[0];
    for (int64_t k = 1; k < K; ++k) m = std::max(m, double(p[k]));
    double z = 0;
    for (int64_t k = 0; k < K; ++k) z += std::exp(p[k] - m);
    const double target = u_component * z;
    int64_t pick = K - 1;
    double acc = 0;
    for (int64_t k = 0; k < K; ++k) {
      acc += std::exp(p[k] - m);
      if (target < acc) {
        pick = k;
        break;
      }
    }
    const double scale = std::exp(std::max(double(p[2 * K + pick]), kMolLogScaleMin));
    const double logistic = std::log(u_logistic) - std::log(1 - u_logistic);
    // Explicit fma: neither compiler may contract these differently.
    const double x = std::fma(scale, logistic, double(p[K + pick]));
    const double bin = std::nearbyint(std::fma(x, 127.5, 127.5));  // (x + 1) / 2 * 255, half to even
    op[b] = int32_t(std::fmin(std::fmax(bin, 0.0), 255.0));
  }
}

}  // namespace lt
