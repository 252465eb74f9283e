// Categorical head: softmax cross entropy over V classes (the 256-way pixel
// softmax and the copy task's symbols), its gradient softmax - onehot, and
// inverse-CDF sampling. Rows are independent: one OpenMP loop over them, with
// vectorised float exponentials summed per SIMD lane (short float partial
// sums: as accurate as a double sum here and four times faster). Sampling
// stays in libm double, like its CUDA twin, so both backends draw the same classes.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/dispatch.h"
#include "common/logistic_bins.h"
#include "heads/heads.h"
#include "ops/simd_math.h"

namespace lt {
namespace {

struct CategoricalDims {
  int64_t rows, V;
};

CategoricalDims categorical_dims(const Tensor& logits, const Tensor& per_row, const char* what,
                                 const char* per_row_name) {
  check(logits.defined() && logits.dim(-1) > 0,
        std::string(what) + ": logits " + shape_str(logits.shape()) + " must end in the classes");
  CategoricalDims d{logits.numel() / logits.dim(-1), logits.dim(-1)};
  check(per_row.defined() && per_row.numel() == d.rows,
        std::string(what) + ": " + per_row_name + " " + shape_str(per_row.shape()) +
            " needs one entry per row of logits " + shape_str(logits.shape()) + " (" +
            std::to_string(d.rows) + " rows)");
  return d;
}

void check_classes(const int32_t* targets, const CategoricalDims& d, const char* what) {
  for (int64_t r = 0; r < d.rows; ++r)
    check(targets[r] >= 0 && targets[r] < d.V,
          std::string(what) + ": target " + std::to_string(targets[r]) + " at row " +
              std::to_string(r) + " is outside the " + std::to_string(d.V) + " classes");
}

float row_max(const float* x, int64_t n) {
  float m = x[0];
#pragma omp simd reduction(max : m)
  for (int64_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

double sum_exp(const float* x, int64_t n, float m) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += simd_math::exp(x[i] - m);
  return s;
}

void categorical_forward_rows(const CategoricalDims& d, Device dev, const float* logits,
                              const int32_t* targets, float* nll, double& sum) {
  if (dev == Device::cuda)
    LT_ON_CUDA(sum = cuda::categorical_loss_forward(logits, targets, nll, d.rows, d.V));
  check_classes(targets, d, "categorical_loss_forward");
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (int64_t r = 0; r < d.rows; ++r) {
    const float* x = logits + r * d.V;
    const float m = row_max(x, d.V);
    // -log softmax(x)_t = log sum_j exp(x_j - m) + m - x_t
    const double l = std::log(sum_exp(x, d.V, m)) + m - x[targets[r]];
    nll[r] = float(l);
    total += l;
  }
  sum = total;
}

}  // namespace

double categorical_loss_forward(const Tensor& logits, const Tensor& targets, Tensor& nll) {
  CategoricalDims d = categorical_dims(logits, targets, "categorical_loss_forward", "targets");
  categorical_dims(logits, nll, "categorical_loss_forward", "nll");
  Device dev = common_device({&logits, &targets, &nll}, "categorical_loss_forward");
  double sum = 0;
  categorical_forward_rows(d, dev, logits.data(), targets.data_i32(), nll.data(), sum);
  return sum / double(d.rows);
}

void categorical_loss_backward(const Tensor& logits, const Tensor& targets, float scale,
                               Tensor& dlogits) {
  CategoricalDims d = categorical_dims(logits, targets, "categorical_loss_backward", "targets");
  check_shape(dlogits, logits.shape(), "categorical_loss_backward dlogits");
  Device dev = common_device({&logits, &targets, &dlogits}, "categorical_loss_backward");
  const float* xp = logits.data();
  const int32_t* tp = targets.data_i32();
  float* gp = dlogits.data();
  if (dev == Device::cuda) LT_ON_CUDA(cuda::categorical_loss_backward(xp, tp, scale, gp, d.rows, d.V));

  check_classes(tp, d, "categorical_loss_backward");
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < d.rows; ++r) {
    const float* x = xp + r * d.V;
    float* g = gp + r * d.V;
    const float m = row_max(x, d.V);
    float z = 0;
#pragma omp simd reduction(+ : z)
    for (int64_t j = 0; j < d.V; ++j) {
      g[j] = simd_math::exp(x[j] - m);
      z += g[j];
    }
    const float scale_over_z = scale / z;
#pragma omp simd
    for (int64_t j = 0; j < d.V; ++j) g[j] *= scale_over_z;  // scale * softmax
    g[tp[r]] -= scale;
  }
}

void categorical_sample(const Tensor& logits, uint64_t seed, int64_t step, Tensor& out) {
  CategoricalDims d = categorical_dims(logits, out, "categorical_sample", "out");
  Device dev = common_device({&logits, &out}, "categorical_sample");
  const float* xp = logits.data();
  int32_t* op = out.data_i32();
  if (dev == Device::cuda) LT_ON_CUDA(cuda::categorical_sample(xp, seed, step, op, d.rows, d.V));

  // kernels/heads.cu draws with the same function: both backends pick the same class.
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < d.rows; ++b) op[b] = int32_t(mol::draw_class(xp + b * d.V, d.V, seed, step, b));
}

void categorical_sample_rows(const Tensor& logits, const uint64_t* seeds, const int64_t* steps, Tensor& out) {
  CategoricalDims d = categorical_dims(logits, out, "categorical_sample_rows", "out");
  check(common_device({&logits, &out}, "categorical_sample_rows") == Device::cpu,
        "categorical_sample_rows: tensors on the CPU");
  const float* xp = logits.data();
  int32_t* op = out.data_i32();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < d.rows; ++b) op[b] = int32_t(mol::draw_class(xp + b * d.V, d.V, seeds[b], steps[b], 0));
}

}  // namespace lt
