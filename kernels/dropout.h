// --- dropout.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// y[i] = keep(i) ? x[i] * scale : 0, keep(i) = top 24 bits of
// mix64(key + (i + 1) * golden) >= threshold: lib/ops/dropout.cpp's mask, bit for bit.
void dropout_apply(const float* x, float* y, int64_t n, uint64_t key, uint32_t threshold, float scale);
}  // namespace lt::kernels
