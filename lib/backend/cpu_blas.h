// Row-major sgemm on the CPU: C = alpha * op(A) op(B) + beta * C (OpenBLAS).
#pragma once
#include <cblas.h>
#include <omp.h>

#include <cstdint>

#include "backend/device.h"

extern "C" void openblas_set_num_threads(int);

namespace lt::cpu {

// Inside our own OpenMP loops each thread calls sgemm on a small block, and
// OpenBLAS must not split those calls over threads of its own. Scoped: the
// process-wide count comes back on exit. Only the thread that opens the
// parallel region may change it: openblas_set_num_threads grows and frees
// OpenBLAS's per-thread buffers without a lock, so two replicas of a
// training step calling it at once leaked one buffer slot now and then, and
// after an hour OpenBLAS ran out of slots ("precompiled NUM_THREADS
// exceeded") and corrupted the heap. Within a parallel region OpenBLAS's
// OpenMP build runs single-threaded anyway.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : outermost_(!omp_in_parallel()) {
    if (outermost_) openblas_set_num_threads(1);
  }
  ~SingleThreadedBlas() {
    if (outermost_) openblas_set_num_threads(num_threads());
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  bool outermost_;
};

inline void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

}  // namespace lt::cpu
