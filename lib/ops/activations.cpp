// Elementwise activations and their derivatives. The backward passes take the
// forward input x (not y), so a layer needs to keep only what it already has.
#include "backend/dispatch.h"
#include "ops/ops.h"
#include "ops/simd_math.h"

namespace lt {
namespace {
constexpr int64_t kParallelMin = 1 << 15;

void check_same(const Tensor& a, const Tensor& b, const char* what, const char* a_name, const char* b_name) {
  if (a.shape() != b.shape())  // a step's every layer: the message only when it throws
    throw Error(std::string(what) + ": " + a_name + " " + shape_str(a.shape()) + " and " + b_name + " " +
                shape_str(b.shape()) + " differ");
}

// Applies f(x[i]) -> y[i] over all elements, in parallel when it pays off.
template <class F>
void map(const Tensor& x, Tensor& y, F f) {
  const int64_t n = x.numel();
  const float* xp = x.data();
  float* yp = y.data();
#pragma omp parallel for simd schedule(static) if (parallel : n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) yp[i] = f(xp[i]);
}

// dx[i] = f'(x[i]) * dy[i].
template <class F>
void map_grad(const Tensor& x, const Tensor& dy, Tensor& dx, F fprime) {
  const int64_t n = x.numel();
  const float* xp = x.data();
  const float* dyp = dy.data();
  float* dxp = dx.data();
#pragma omp parallel for simd schedule(static) if (parallel : n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) dxp[i] = fprime(xp[i]) * dyp[i];
}

constexpr float kMinusInvSqrt2 = -0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
}  // namespace

void relu_forward(const Tensor& x, Tensor& y) {
  check_same(x, y, "relu_forward", "x", "y");
  Device dev = common_device({&x, &y}, "relu_forward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::relu_forward(x.data(), y.data(), x.numel()));
  map(x, y, [](float v) { return simd_math::relu(v); });
}

void relu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  check_same(x, dy, "relu_backward", "x", "dy");
  check_same(x, dx, "relu_backward", "x", "dx");
  Device dev = common_device({&x, &dy, &dx}, "relu_backward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::relu_backward(x.data(), dy.data(), dx.data(), x.numel()));
  map_grad(x, dy, dx, [](float v) { return v > 0.f ? 1.f : 0.f; });
}

// gelu(x) = x Phi(x), Phi the standard normal CDF = (1 + erf(x / sqrt 2)) / 2,
// evaluated as erfc(-x / sqrt 2) / 2 to stay accurate where Phi is tiny.
void gelu_forward(const Tensor& x, Tensor& y) {
  check_same(x, y, "gelu_forward", "x", "y");
  Device dev = common_device({&x, &y}, "gelu_forward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::gelu_forward(x.data(), y.data(), x.numel()));
  map(x, y, [](float v) { return 0.5f * v * simd_math::erfc(v * kMinusInvSqrt2); });
}

// gelu'(x) = Phi(x) + x phi(x), phi the standard normal density.
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  check_same(x, dy, "gelu_backward", "x", "dy");
  check_same(x, dx, "gelu_backward", "x", "dx");
  Device dev = common_device({&x, &dy, &dx}, "gelu_backward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::gelu_backward(x.data(), dy.data(), dx.data(), x.numel()));
  map_grad(x, dy, dx, [](float v) {
    return 0.5f * simd_math::erfc(v * kMinusInvSqrt2) + v * kInvSqrt2Pi * simd_math::exp(-0.5f * v * v);
  });
}

// The paper's feature map phi(x) = elu(x) + 1 (eq. 7): x + 1 for x > 0,
// exp(x) otherwise, so phi > 0 and the attention normaliser never vanishes.
void elu_plus_one_forward(const Tensor& x, Tensor& y) {
  check_same(x, y, "elu_plus_one_forward", "x", "y");
  Device dev = common_device({&x, &y}, "elu_plus_one_forward");
  if (dev == Device::cuda) LT_ON_CUDA(cuda::elu_plus_one_forward(x.data(), y.data(), x.numel()));
  map(x, y, [](float v) { return simd_math::elu_plus_one(v); });
}

void elu_plus_one_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  check_same(x, dy, "elu_plus_one_backward", "x", "dy");
  check_same(x, dx, "elu_plus_one_backward", "x", "dx");
  Device dev = common_device({&x, &dy, &dx}, "elu_plus_one_backward");
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::elu_plus_one_backward(x.data(), dy.data(), dx.data(), x.numel()));
  map_grad(x, dy, dx, [](float v) { return v > 0.f ? 1.f : simd_math::exp(v); });
}

}  // namespace lt
