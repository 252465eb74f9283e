// Discretized mixture of logistics, exactly the reference's
// discretized_mix_logistic_loss (idiap/linear-transformer-experiments,
// image-generation/utils.py, itself PixelCNN++'s): the same clamp, the same
// bin edges and the same four cases, including the density fallback for bins
// with almost no mass (logistic_bins.h, shared with kernels/heads.cu). The
// per-position math runs in double: R * K terms are
// few next to the model, and the bin mass sigmoid(a) - sigmoid(b) cancels.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/dispatch.h"
#include "common/logistic_bins.h"
#include "heads/heads.h"

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

using mol::BinLogProb;

// Fills bins[k] for one row and returns its nll = -logsumexp_k(log pi_k + log P_k).
double row_nll(const float* p, int64_t K, int32_t byte, BinLogProb* bins) {
  const double y = mol::target_value(byte), lse_logits = mol::log_sum_exp(p, K);
  double m = -INFINITY;
  for (int64_t k = 0; k < K; ++k) {
    bins[k] = mol::bin_log_prob(y, p[K + k], p[2 * K + k]);
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
      const double nll = row_nll(p, K, tp[r], bins.data()), lse_logits = mol::log_sum_exp(p, K);
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
  // distribution from the one its loss models; we sample the modelled one
  // (mol::draw_byte, kernels/heads.cu's too).
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < d.rows; ++b) op[b] = mol::draw_byte(pp + b * 3 * d.K, d.K, seed, step, b);
}

void mol_sample_rows(const Tensor& params, const uint64_t* seeds, const int64_t* steps, Tensor& out) {
  MolDims d = mol_dims(params, out, "mol_sample_rows", "out");
  check(common_device({&params, &out}, "mol_sample_rows") == Device::cpu, "mol_sample_rows: tensors on the CPU");
  const float* pp = params.data();
  int32_t* op = out.data_i32();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < d.rows; ++b) op[b] = mol::draw_byte(pp + b * 3 * d.K, d.K, seeds[b], steps[b], 0);
}

}  // namespace lt
