// Row-major sgemm on the CPU: C = alpha * op(A) op(B) + beta * C (OpenBLAS).
#pragma once
#include <cblas.h>

#include <cstdint>

#include "lt/backend.h"

extern "C" void openblas_set_num_threads(int);

namespace lt::cpu {

// Inside our own OpenMP loops each thread calls sgemm on a small block; the
// pthreads OpenBLAS must then not spawn threads of its own. Scoped: restores
// the process-wide count on exit.
struct SingleThreadedBlas {
  SingleThreadedBlas() { openblas_set_num_threads(1); }
  ~SingleThreadedBlas() { openblas_set_num_threads(num_threads()); }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

inline void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

}  // namespace lt::cpu
