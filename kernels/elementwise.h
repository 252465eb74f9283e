// --- elementwise.cu ---
#pragma once
#include <cstdint>

namespace lt::cuda {
// y[i] = a[i] + b[i]; y may alias a or b.
void add(const float* a, const float* b, float* y, int64_t n);
// dst[i] += src[i].
void accumulate(float* dst, const float* src, int64_t n);
}  // namespace lt::cuda
