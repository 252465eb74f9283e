// Row-major C = op(A) op(B) (+ C when accumulate) with both operands rounded
// to bfloat16 (nearest even) and fp32 sums, on AVX512_BF16 (vdpbf16ps): the
// CPU's linear-layer products in training when set_cpu_bf16_matmul is on.
// OpenBLAS has no bf16 product in the versions Debian ships (no sbgemm).
#pragma once
#include <cstdint>

namespace lt::cpu {

// op(A) is m x k, op(B) k x n. Threads split the rows of C with OpenMP (one
// thread inside a parallel region); each element is summed in one fixed
// order, so the result does not depend on the thread count. The caller checks
// cpu_has_bf16().
void bf16_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* A, int64_t lda,
               const float* B, int64_t ldb, bool accumulate, float* C, int64_t ldc);

}  // namespace lt::cpu
