// --- dropout.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// y[i] = keep(i) ? x[i] * scale : 0 over x viewed as [outer, rows, inner]:
// element j of row r (batch row first + r) is kept when the top 24 bits of
// mix64(row key + (j + 1) * golden) >= threshold, the row key
// mix64(key + (first + r + 1) * odd): lib/ops/dropout.cpp's mask, bit for bit.
void dropout_apply(const float* x, float* y, int64_t n, uint64_t key, uint32_t threshold, float scale, int64_t first,
                   int64_t rows, int64_t inner);
}  // namespace lt::kernels
