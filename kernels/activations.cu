// Elementwise activations on the GPU: one grid-stride kernel template per
// shape of work (y = f(x), dx = f'(x) dy), each activation a small functor.
// The formulas mirror lib/ops/activations.cpp; erff is not replaced by an
// intrinsic under --use_fast_math, expf's intrinsic is accurate to ~1e-6 here.
#include <algorithm>

#include "activations.h"
#include "cuda_check.cuh"
#include "feature_maps.cuh"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
unsigned grid_for(int64_t n) { return std::min<unsigned>(blocks_for(n, kThreads), 1u << 16); }

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

struct ReluGrad {
  __device__ float operator()(float v) const { return v > 0.f ? 1.f : 0.f; }
};
struct Gelu {
  __device__ float operator()(float v) const { return 0.5f * v * (1.f + erff(v * kInvSqrt2)); }
};
struct GeluGrad {
  __device__ float operator()(float v) const {
    return 0.5f * (1.f + erff(v * kInvSqrt2)) + v * kInvSqrt2Pi * expf(-0.5f * v * v);
  }
};
struct EluPlusOneGrad {
  __device__ float operator()(float v) const { return v > 0.f ? 1.f : expf(v); }
};

template <class F>
__global__ void map_kernel(const float* x, float* y, long long n, F f) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = f(x[i]);
}

template <class F>
__global__ void map_grad_kernel(const float* x, const float* dy, float* dx, long long n, F fprime) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dx[i] = fprime(x[i]) * dy[i];
}

template <class F>
void map(const float* x, float* y, int64_t n) {
  if (n == 0) return;
  map_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, y, n, F{});
  LT_CUDA_LAUNCH_CHECK();
}

template <class F>
void map_grad(const float* x, const float* dy, float* dx, int64_t n) {
  if (n == 0) return;
  map_grad_kernel<<<grid_for(n), kThreads, 0, stream()>>>(x, dy, dx, n, F{});
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void relu_forward(const float* x, float* y, int64_t n) { map<Relu>(x, y, n); }
void relu_backward(const float* x, const float* dy, float* dx, int64_t n) { map_grad<ReluGrad>(x, dy, dx, n); }
void gelu_forward(const float* x, float* y, int64_t n) { map<Gelu>(x, y, n); }
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) { map_grad<GeluGrad>(x, dy, dx, n); }
void elu_plus_one_forward(const float* x, float* y, int64_t n) { map<EluPlusOne>(x, y, n); }
void elu_plus_one_backward(const float* x, const float* dy, float* dx, int64_t n) {
  map_grad<EluPlusOneGrad>(x, dy, dx, n);
}

}  // namespace lt::kernels
