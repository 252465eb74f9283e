// LayerNorm over the last axis (torch.nn.LayerNorm: biased variance, eps
// inside the square root). The forward saves mean and rstd per row so that the
// backward does not recompute them. Rows are independent, so both passes run
// one OpenMP thread per block of rows; dgamma and dbeta, sums over all rows,
// go through per-thread partial sums reduced at the end. The partials are
// double: a float running sum over 10^5 rows would lose ~1e-5 relative.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/dispatch.h"
#include "ops/ops.h"

namespace lt {
namespace {
constexpr int64_t kParallelMin = 1 << 14;

struct LayerNormDims {
  int64_t rows, C;
};

LayerNormDims layernorm_dims(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                             const char* what) {
  // Every step's: messages are built only on failure.
  if (!(x.ndim() >= 1 && x.dim(-1) > 0))
    throw Error(std::string(what) + ": needs a non-empty last axis, got x " + shape_str(x.shape()));
  LayerNormDims d{0, x.dim(-1)};
  d.rows = x.numel() / d.C;
  if (gamma.shape() != Shape{d.C}) check_shape(gamma, {d.C}, (std::string(what) + " gamma").c_str());  // names it
  if (!(mean.numel() == d.rows && rstd.numel() == d.rows))
    throw Error(std::string(what) + ": mean " + shape_str(mean.shape()) + " and rstd " + shape_str(rstd.shape()) +
                " must hold one value per row of x " + shape_str(x.shape()) + " (" + std::to_string(d.rows) + ")");
  return d;
}
}  // namespace

namespace {
// Rows of LayerNorm(x + res) (Residual) or LayerNorm(x); mean and rstd are
// written when given.
template <bool Residual>
void layernorm_rows(const float* xp, const float* rp, const float* g, const float* b, float* yp, float* mp,
                    float* sp, int64_t rows, int64_t C) {
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * C;
    const float* rr = Residual ? rp + r * C : nullptr;
    auto at = [&](int64_t c) { return Residual ? xr[c] + rr[c] : xr[c]; };
    float* yr = yp + r * C;
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t c = 0; c < C; ++c) s += at(c);
    const float m = s / static_cast<float>(C);
    float v = 0.f;  // two passes: no cancellation when |mean| >> std
#pragma omp simd reduction(+ : v)
    for (int64_t c = 0; c < C; ++c) v += (at(c) - m) * (at(c) - m);
    const float rs = 1.f / std::sqrt(v / static_cast<float>(C) + kLayerNormEps);
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) yr[c] = (at(c) - m) * rs * g[c] + b[c];
    if (mp) {
      mp[r] = m;
      sp[r] = rs;
    }
  }
}
}  // namespace

void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, Tensor& mean,
                       Tensor& rstd) {
  const LayerNormDims d = layernorm_dims(x, gamma, mean, rstd, "layernorm_forward");
  check_shape(beta, {d.C}, "layernorm_forward beta");
  check_shape(y, x.shape(), "layernorm_forward y");
  Device dev = common_device({&x, &gamma, &beta, &y, &mean, &rstd}, "layernorm_forward");
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::layernorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                                       d.rows, d.C));
  layernorm_rows<false>(x.data(), nullptr, gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), d.rows,
                        d.C);
}

void residual_layernorm_forward(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                                Tensor& y) {
  const char* what = "residual_layernorm_forward";
  if (!(x.ndim() >= 1 && x.dim(-1) > 0))  // a step's every layer: the message only when it throws
    throw Error(std::string(what) + ": needs a non-empty last axis, got x " + shape_str(x.shape()));
  const int64_t C = x.dim(-1), rows = x.numel() / C;
  check_shape(residual, x.shape(), "residual_layernorm_forward residual");
  check_shape(gamma, {C}, "residual_layernorm_forward gamma");
  check_shape(beta, {C}, "residual_layernorm_forward beta");
  check_shape(y, x.shape(), "residual_layernorm_forward y");
  Device dev = common_device({&x, &residual, &gamma, &beta, &y}, what);
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::residual_layernorm_forward(x.data(), residual.data(), gamma.data(), beta.data(), y.data(),
                                                rows, C));
  layernorm_rows<true>(x.data(), residual.data(), gamma.data(), beta.data(), y.data(), nullptr, nullptr, rows, C);
}

// With xhat = (x - mean) rstd and g = dy * gamma, per row:
//   dx = rstd (g - mean(g) - xhat mean(g xhat)),  dgamma += dy xhat,  dbeta += dy.
void layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                        const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const LayerNormDims d = layernorm_dims(x, gamma, mean, rstd, "layernorm_backward");
  check_shape(dy, x.shape(), "layernorm_backward dy");
  check_shape(dx, x.shape(), "layernorm_backward dx");
  check_shape(dgamma, {d.C}, "layernorm_backward dgamma");
  check_shape(dbeta, {d.C}, "layernorm_backward dbeta");
  Device dev = common_device({&x, &gamma, &mean, &rstd, &dy, &dx, &dgamma, &dbeta}, "layernorm_backward");
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::layernorm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), dx.data(),
                                        dgamma.data(), dbeta.data(), d.rows, d.C));

  const int64_t C = d.C;
  const float* xp = x.data();
  const float* g = gamma.data();
  const float* mp = mean.data();
  const float* rp = rstd.data();
  const float* dyp = dy.data();
  float* dxp = dx.data();
  // Per-thread [dgamma | dbeta] partial sums; grows once per calling thread.
  const bool parallel = d.rows * C >= kParallelMin;
  const int threads = parallel ? omp_get_max_threads() : 1;
  thread_local std::vector<double> partial;
  if (partial.size() < static_cast<size_t>(threads * 2 * C)) partial.resize(threads * 2 * C);
  std::fill_n(partial.begin(), threads * 2 * C, 0.0);
  double* part = partial.data();

#pragma omp parallel if (parallel)
  {
    double* pg = part + omp_get_thread_num() * 2 * C;
    double* pb = pg + C;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < d.rows; ++r) {
      const float* xr = xp + r * C;
      const float* dyr = dyp + r * C;
      float* dxr = dxp + r * C;
      const float m = mp[r], rs = rp[r];
      float sum_g = 0.f, sum_gx = 0.f;
#pragma omp simd reduction(+ : sum_g, sum_gx)
      for (int64_t c = 0; c < C; ++c) {
        const float xhat = (xr[c] - m) * rs;
        const float gc = dyr[c] * g[c];
        sum_g += gc;
        sum_gx += gc * xhat;
        pg[c] += dyr[c] * xhat;
        pb[c] += dyr[c];
      }
      const float mean_g = sum_g / static_cast<float>(C), mean_gx = sum_gx / static_cast<float>(C);
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        const float xhat = (xr[c] - m) * rs;
        dxr[c] = rs * (dyr[c] * g[c] - mean_g - xhat * mean_gx);
      }
    }
  }

  float* dg = dgamma.data();
  float* db = dbeta.data();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t c = 0; c < C; ++c) {
    double sg = 0.0, sb = 0.0;
    for (int t = 0; t < threads; ++t) {
      sg += part[t * 2 * C + c];
      sb += part[t * 2 * C + C + c];
    }
    dg[c] += static_cast<float>(sg);
    db[c] += static_cast<float>(sb);
  }
}

}  // namespace lt
