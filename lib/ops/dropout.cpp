// Inverted dropout with a stateless mask: element j of batch row b is kept
// when a 24-bit uniform hashed from (seed, b, j) is >= p * 2^24. The hash is
// SplitMix64: the row's key is mix64 of the seed's key plus (b + 1) times one
// odd constant, and element j the (j+1)-th output of the row's stream. The
// backward pass and the CUDA kernel (kernels/dropout.cu, the same arithmetic)
// recompute exactly the mask of the forward, and nothing is stored.
#include <algorithm>
#include <cmath>

#include "backend/dispatch.h"
#include "ops/ops.h"

namespace lt {
namespace {
constexpr int64_t kParallelMin = 1 << 15;
constexpr int64_t kBlock = 1 << 12;  // elements per OpenMP work item
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kRowOdd = 0xD1B54A32D192ED03ull;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// y = x * keep / (1 - p): the forward on x, and equally the backward on dy.
void apply_mask(const Tensor& x, float p, uint64_t seed, const BatchRows& at, Tensor& y, const char* what) {
  check(p >= 0.f && p < 1.f, std::string(what) + ": p must be in [0, 1), got " + std::to_string(p));
  check_shape(y, x.shape(), what);
  Device dev = common_device({&x, &y}, what);
  const int64_t n = x.numel();
  check(at.first >= 0 && at.rows >= 1 && at.outer >= 1 && n % (at.rows * at.outer) == 0,
        std::string(what) + ": batch rows (first " + std::to_string(at.first) + ", " + std::to_string(at.rows) +
            " rows, outer " + std::to_string(at.outer) + ") do not divide a tensor of " + std::to_string(n) +
            " elements");
  const uint64_t key = mix64(seed + kGolden);
  const uint32_t threshold = static_cast<uint32_t>(std::ldexp(static_cast<double>(p), 24));
  const float scale = 1.f / (1.f - p);
  const int64_t inner = n / (at.rows * at.outer);
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::dropout_apply(x.data(), y.data(), n, key, threshold, scale, at.first, at.rows, inner));

  const float* xp = x.data();
  float* yp = y.data();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (parallel : n >= kParallelMin)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    for (int64_t i = blk * kBlock, end = std::min(n, i + kBlock); i < end;) {
      const int64_t segment = i / inner, r = segment % at.rows, o = segment / at.rows;
      const uint64_t row_key = mix64(key + uint64_t(at.first + r + 1) * kRowOdd);
      const int64_t stop = std::min(end, (segment + 1) * inner), pos = o * inner - segment * inner;
#pragma omp simd
      for (int64_t k = i; k < stop; ++k) {
        const uint32_t u = static_cast<uint32_t>(mix64(row_key + uint64_t(pos + k + 1) * kGolden) >> 40);
        yp[k] = u >= threshold ? xp[k] * scale : 0.f;
      }
      i = stop;
    }
  }
}
}  // namespace

void dropout_forward(const Tensor& x, float p, uint64_t seed, Tensor& y, const BatchRows& at) {
  apply_mask(x, p, seed, at, y, "dropout_forward");
}

// d(x * mask * scale)/dx = mask * scale: the same map applied to dy.
void dropout_backward(const Tensor& dy, float p, uint64_t seed, Tensor& dx, const BatchRows& at) {
  apply_mask(dy, p, seed, at, dx, "dropout_backward");
}

}  // namespace lt
