// Error checks for CUDA and cuBLAS calls: every call and launch goes through these.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "common/error.h"

#define LT_CUDA_CHECK(call)                                                                  \
  do {                                                                                       \
    cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess)                                                                 \
      throw lt::Error(std::string("CUDA error: ") + cudaGetErrorString(err_) + " (" #call   \
                      ") at " __FILE__ ":" + std::to_string(__LINE__));                     \
  } while (0)

#define LT_CUBLAS_CHECK(call)                                                                \
  do {                                                                                       \
    cublasStatus_t st_ = (call);                                                             \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                        \
      throw lt::Error(std::string("cuBLAS error: ") + cublasGetStatusString(st_) + " (" #call \
                      ") at " __FILE__ ":" + std::to_string(__LINE__));                     \
  } while (0)

// After a kernel launch: catches bad configurations and earlier async faults.
#define LT_CUDA_LAUNCH_CHECK() LT_CUDA_CHECK(cudaGetLastError())

namespace lt::kernels {
cudaStream_t stream();          // every launch, copy and library call of the process goes here, in order
cublasHandle_t cublas();        // one handle per process, created on first use
cublasLtHandle_t cublas_lt();  // likewise, for the products with an epilogue
inline unsigned blocks_for(long long n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}
}  // namespace lt::kernels
