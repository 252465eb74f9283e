// Inverted dropout with a stateless mask: element i of a tensor is kept when
// a 24-bit uniform hashed from (seed, i) is >= p * 2^24. The hash is SplitMix64
// (the stream of key = splitmix64(seed), element i its (i+1)-th output), so
// the backward pass and the CUDA kernel (kernels/dropout.cu, the same
// arithmetic) recompute exactly the mask of the forward, and nothing is stored.
#include <cmath>

#include "backend/dispatch.h"
#include "lt/ops.h"

namespace lt {
namespace {
constexpr int64_t kParallelMin = 1 << 15;
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// y = x * keep(i) / (1 - p): the forward on x, and equally the backward on dy.
void apply_mask(const Tensor& x, float p, uint64_t seed, Tensor& y, const char* what) {
  check(p >= 0.f && p < 1.f, std::string(what) + ": p must be in [0, 1), got " + std::to_string(p));
  check_shape(y, x.shape(), what);
  Device dev = common_device({&x, &y}, what);
  const uint64_t key = mix64(seed + kGolden);
  const uint32_t threshold = static_cast<uint32_t>(std::ldexp(static_cast<double>(p), 24));
  const float scale = 1.f / (1.f - p);
  const int64_t n = x.numel();
  if (dev == Device::cuda) LT_ON_CUDA(cuda::dropout_apply(x.data(), y.data(), n, key, threshold, scale));

  const float* xp = x.data();
  float* yp = y.data();
#pragma omp parallel for simd schedule(static) if (parallel : n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(mix64(key + (static_cast<uint64_t>(i) + 1) * kGolden) >> 40);
    yp[i] = u >= threshold ? xp[i] * scale : 0.f;
  }
}
}  // namespace

void dropout_forward(const Tensor& x, float p, uint64_t seed, Tensor& y) {
  apply_mask(x, p, seed, y, "dropout_forward");
}

// d(x * mask * scale)/dx = mask * scale: the same map applied to dy.
void dropout_backward(const Tensor& dy, float p, uint64_t seed, Tensor& dx) {
  apply_mask(dy, p, seed, dx, "dropout_backward");
}

}  // namespace lt
