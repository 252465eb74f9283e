// Gradient clipping by L2 norm with torch.nn.utils.clip_grad_norm_'s rule:
// scale by max_norm / (norm + 1e-6) when that is below 1. Norms accumulate in
// double. Per-segment clipping reproduces the reference's RAdam, which clips
// each parameter tensor separately.
#include <cmath>
#include <string>

#include "backend/dispatch.h"
#include "optim/optimizer.h"

namespace lt {
namespace {

double clip_factor(double norm, float max_norm) { return double(max_norm) / (norm + 1e-6); }

void clip_segments(float* g, const std::vector<int64_t>& offsets, float max_norm, Device dev,
                   std::vector<double>& norms) {
  const int64_t segments = int64_t(offsets.size()) - 1;
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::clip_grad_norm_segments(g, offsets.data(), segments, max_norm, norms.data()));
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t begin = offsets[s], end = offsets[s + 1];
    double sum = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : sum)
    for (int64_t i = begin; i < end; ++i) sum += double(g[i]) * g[i];
    norms[s] = std::sqrt(sum);
    const double factor = clip_factor(norms[s], max_norm);
    if (factor >= 1) continue;
    const float f = float(factor);
#pragma omp parallel for simd schedule(static)
    for (int64_t i = begin; i < end; ++i) g[i] *= f;
  }
}

}  // namespace

std::vector<double> clip_grad_norm_segments(Tensor& grad, const std::vector<int64_t>& segment_sizes,
                                            float max_norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got " + std::to_string(max_norm));
  std::vector<int64_t> offsets{0};
  for (int64_t size : segment_sizes) {
    check(size >= 0, "clip_grad_norm: negative segment size " + std::to_string(size));
    offsets.push_back(offsets.back() + size);
  }
  check(offsets.back() == grad.numel(),
        "clip_grad_norm: segment sizes add up to " + std::to_string(offsets.back()) +
            " but the gradient " + shape_str(grad.shape()) + " has " + std::to_string(grad.numel()) +
            " values");
  Device dev = common_device({&grad}, "clip_grad_norm");
  std::vector<double> norms(segment_sizes.size());
  clip_segments(grad.data(), offsets, max_norm, dev, norms);
  return norms;
}

double clip_grad_norm(Tensor& grad, float max_norm) {
  return clip_grad_norm_segments(grad, {grad.numel()}, max_norm)[0];
}

}  // namespace lt
