// --- elementwise.cu ---
#pragma once
#include <cstdint>

namespace lt::kernels {
// y[i] = a[i] + b[i]; y may alias a or b.
void add(const float* a, const float* b, float* y, int64_t n);
// dst[i] += src[i].
void accumulate(float* dst, const float* src, int64_t n);
// dst[r, c] = src[r, first + c] for rows x cols of dst; src has src_cols columns.
void copy_columns(const float* src, int64_t src_cols, int64_t first, float* dst, int64_t rows, int64_t cols);
// dst [n1, n0, C] = src [n0, n1, C].
void swap_leading_axes(const float* src, int64_t n0, int64_t n1, int64_t C, float* dst);
}  // namespace lt::kernels
