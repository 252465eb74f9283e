// FAVOR+ (Choromanski et al. 2021, "Rethinking Attention with Performers"):
// positive orthogonal random features whose inner products estimate the
// softmax kernel exp(q^T k / sqrt(E)), so linear attention (eq. 4-6 of
// Katharopoulos et al.) approximates softmax attention (eq. 2).
//
// Lemma 1 of the Performer: exp(x^T y) = E_w[exp(w^T x - |x|^2/2) exp(w^T y - |y|^2/2)]
// = exp(-(|x|^2 + |y|^2)/2) E_w[cosh(w^T (x + y))], w ~ N(0, I). We use its
// hyperbolic form, as fast-transformers' Favor does: with P = F/2 projections
// w_j (the columns of omega [E, P]) and x~ = E^(-1/4) x (so that
// x~^T y~ = x^T y / sqrt(E), softmax's temperature),
//   phi(x) = [exp(u - |x~|^2/2), exp(-u - |x~|^2/2)] / sqrt(F),  u = omega^T x~,
// and phi(q)^T phi(k) = (1/P) sum_j exp(-(|q~|^2+|k~|^2)/2) cosh(w_j^T (q~ + k~)),
// an unbiased estimate. Every feature is positive, so the normaliser of eq. 4
// stays positive (the point of FAVOR+ over trigonometric features). For the same
// F the hyperbolic form is never worse: its variance is (1 - exp(-|q~+k~|^2))
// times that of F one-sided features (Performer section 2.3). Storing omega
// [E, F/2] under the name "omega" is also what fast-transformers' state_dict
// holds, so its checkpoints load as they are.
//
// No stabiliser: fast-transformers' optional one subtracts the largest |x~|^2
// over the whole sequence, which a causal model cannot know at step t. None is
// needed against overflow: u_j - |x~|^2/2 = (|w_j|^2 - |x~ - w_j|^2)/2 <= |w_j|^2/2,
// about E/2 (16 for E = 32), far below float's exp limit of 88, whatever x is.
//
// omega is drawn on the host in float64 from counter-based uniforms (common/random.h)
// and rounded once, so a seed gives the same projection on every device.
#include <cmath>
#include <vector>

#include "attention/feature_map.h"
#include "backend/dispatch.h"
#include "common/random.h"
#include "ops/simd_math.h"

namespace lt {

std::unique_ptr<FeatureMap> make_favor_feature_map(const FeatureMapOptions& options);

namespace {

constexpr double kTwoPi = 6.283185307179586;

// The Performer's m = E ln E features (its Theorem 4 shows m = Theta(d log d)
// suffices for a uniformly good softmax estimate), rounded up to an even F
// for the exp(+u) | exp(-u) halves: 112 for E = 32, 268 for E = 64.
int64_t default_features(int64_t E) {
  const double m = double(E) * std::log(double(E));
  return std::max<int64_t>(2, 2 * int64_t(std::ceil(m / 2)));
}

// A standard normal (Box-Muller, its cosine half) from two uniforms of the
// counter-based stream, addressed by (block, row, i).
double normal(uint64_t seed, int64_t block, int64_t row, int i) {
  const double u1 = sample_uniform(seed, block, row, 2 * i), u2 = sample_uniform(seed, block, row, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// omega [E, P]: its columns in blocks of E orthogonal directions (Performer
// section 2.4: orthogonal w_j lower the estimate's variance). Each block
// orthonormalises the columns of an E x E Gaussian matrix by Gram-Schmidt
// (twice, for orthogonality to float64 rounding), which gives Haar-distributed
// directions, and scales column j by the norm of a fresh Gaussian vector (chi
// with E degrees of freedom), so that each w_j is marginally N(0, I).
std::vector<float> draw_omega(int64_t E, int64_t P, uint64_t seed) {
  std::vector<float> omega(size_t(E * P));
  std::vector<double> Q(size_t(E * E));  // Q[c * E + e]: column c of the block
  for (int64_t block = 0; block * E < P; ++block) {
    for (int64_t c = 0; c < E; ++c) {
      double* q = &Q[size_t(c * E)];
      for (int64_t e = 0; e < E; ++e) q[e] = normal(seed, block, c, int(e));
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t prev = 0; prev < c; ++prev) {
          const double* p = &Q[size_t(prev * E)];
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += p[e] * q[e];
          for (int64_t e = 0; e < E; ++e) q[e] -= dot * p[e];
        }
      double norm = 0;
      for (int64_t e = 0; e < E; ++e) norm += q[e] * q[e];
      norm = std::sqrt(norm);
      for (int64_t e = 0; e < E; ++e) q[e] /= norm;
    }
    for (int64_t c = 0; c < E && block * E + c < P; ++c) {
      double chi = 0;
      for (int64_t i = 0; i < E; ++i) {
        const double g = normal(seed, block, E + c, int(i));
        chi += g * g;
      }
      chi = std::sqrt(chi);
      for (int64_t e = 0; e < E; ++e) omega[size_t(e * P + block * E + c)] = float(chi * Q[size_t(c * E + e)]);
    }
  }
  return omega;
}

// u [P] = omega^T x~ for one row, x~ = scale x; returns |x~|^2.
float project(const float* x, const float* omega, int64_t E, int64_t P, float scale, float* __restrict u) {
  float sq = 0.f;
  for (int64_t j = 0; j < P; ++j) u[j] = 0.f;
  for (int64_t e = 0; e < E; ++e) {
    const float xe = scale * x[e];
    const float* __restrict w = omega + e * P;
    sq += xe * xe;
#pragma omp simd
    for (int64_t j = 0; j < P; ++j) u[j] += xe * w[j];
  }
  return sq;
}

// phi of `rows` rows of x [rows, E] into y [rows, 2P]; u is computed in y's
// first half, then both halves are written from it.
void forward_rows(const float* x, const float* omega, float* y, int64_t rows, int64_t E, int64_t P, float scale,
                  float log_norm) {
#pragma omp parallel for schedule(static) if (rows * E * P >= (1 << 16))
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict yr = y + r * 2 * P;
    const float offset = 0.5f * project(x + r * E, omega, E, P, scale, yr) + log_norm;
#pragma omp simd
    for (int64_t j = 0; j < P; ++j) {
      const float u = yr[j];
      yr[j] = simd_math::exp(u - offset);
      yr[P + j] = simd_math::exp(-u - offset);
    }
  }
}

// dx = E^(-1/4) [omega (g+ - g-) - x~ sum_j (g+_j + g-_j)], g+- = dy+- * phi+-:
// d phi+-_j / d x~ = phi+-_j (+-w_j - x~). phi is recomputed from x.
void backward_rows(const float* x, const float* omega, const float* dy, float* dx, int64_t rows, int64_t E,
                   int64_t P, float scale, float log_norm) {
#pragma omp parallel if (rows * E * P >= (1 << 16))
  {
    std::vector<float> buffer(size_t(2 * P));  // u, then g+ - g-
    float* __restrict u = buffer.data();
    float* __restrict diff = u + P;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * E;
      const float* gr = dy + r * 2 * P;
      const float offset = 0.5f * project(xr, omega, E, P, scale, u) + log_norm;
      float total = 0.f;
#pragma omp simd reduction(+ : total)
      for (int64_t j = 0; j < P; ++j) {
        const float plus = gr[j] * simd_math::exp(u[j] - offset), minus = gr[P + j] * simd_math::exp(-u[j] - offset);
        diff[j] = plus - minus;
        total += plus + minus;
      }
      for (int64_t e = 0; e < E; ++e) {
        const float* __restrict w = omega + e * P;
        float a = 0.f;
#pragma omp simd reduction(+ : a)
        for (int64_t j = 0; j < P; ++j) a += w[j] * diff[j];
        dx[r * E + e] = scale * (a - scale * xr[e] * total);
      }
    }
  }
}

class FavorFeatureMap final : public FeatureMap {
 public:
  FavorFeatureMap(int64_t E, int64_t F, uint64_t seed, Device device)
      : E_(E), F_(F), omega_(Tensor::empty({E, F / 2}, device)) {
    redraw(seed);
  }

  std::string name() const override { return "favor"; }
  int64_t feature_dim(int64_t head_dim) const override {
    if (head_dim != E_)
      throw Error("feature map favor was drawn for head dimension " + std::to_string(E_) + ", not " +
                  std::to_string(head_dim));
    return F_;
  }

  void forward(const Tensor& x, Tensor& y) const override {
    const int64_t rows = check_input(x);
    check_shape(y, with_last(x.shape(), F_), "feature map favor output");
    const Device dev = common_device({&x, &y, &omega_}, "feature map favor");
    if (rows == 0) return;
    if (dev == Device::cuda)
      LT_ON_CUDA(cuda::favor_forward(x.data(), omega_.data(), y.data(), rows, E_, F_ / 2, scale(), log_norm()));
    forward_rows(x.data(), omega_.data(), y.data(), rows, E_, F_ / 2, scale(), log_norm());
  }

  void backward(const Tensor& x, const Tensor& dy, Tensor& dx) const override {
    const int64_t rows = check_input(x);
    check_shape(dy, with_last(x.shape(), F_), "feature map favor dy");
    check_shape(dx, x.shape(), "feature map favor dx");
    const Device dev = common_device({&x, &dy, &dx, &omega_}, "feature map favor");
    if (rows == 0) return;
    if (dev == Device::cuda)
      LT_ON_CUDA(cuda::favor_backward(x.data(), omega_.data(), dy.data(), dx.data(), rows, E_, F_ / 2, scale(),
                                      log_norm()));
    backward_rows(x.data(), omega_.data(), dy.data(), dx.data(), rows, E_, F_ / 2, scale(), log_norm());
  }

  std::map<std::string, Tensor> tensors() const override { return {{"omega", omega_}}; }

  void redraw(uint64_t seed) override {
    omega_.copy_from(Tensor::from_vector(draw_omega(E_, F_ / 2, seed), omega_.shape()));
  }

 private:
  // x~ = E^(-1/4) x: softmax's 1/sqrt(E) split between q and k.
  float scale() const { return float(std::pow(double(E_), -0.25)); }
  // 1/sqrt(F) folded into the exponent.
  float log_norm() const { return float(0.5 * std::log(double(F_))); }

  static Shape with_last(Shape s, int64_t last) {
    s.back() = last;
    return s;
  }
  // The number of rows of x [..., E] (messages are built only on failure:
  // the recurrent step calls this once per token and layer).
  int64_t check_input(const Tensor& x) const {
    if (x.ndim() < 1 || x.dim(-1) != E_)
      throw Error("feature map favor: input " + shape_str(x.shape()) + " must end in the head dimension " +
                  std::to_string(E_));
    return x.numel() / E_;
  }

  int64_t E_, F_;
  Tensor omega_;  // [E, F/2], column j = w_j
};

}  // namespace

std::unique_ptr<FeatureMap> make_favor_feature_map(const FeatureMapOptions& o) {
  check(o.head_dim >= 1, "feature map favor needs the head dimension (FeatureMapOptions::head_dim), got " +
                             std::to_string(o.head_dim));
  const int64_t F = o.features == 0 ? default_features(o.head_dim) : o.features;
  check(F >= 2 && F % 2 == 0, "feature map favor needs an even number of features (exp(+u) and exp(-u) halves), got " +
                                  std::to_string(F));
  require_device(o.device);
  return std::make_unique<FavorFeatureMap>(o.head_dim, F, o.seed, o.device);
}

}  // namespace lt
