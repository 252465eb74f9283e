// LT_HOST_DEVICE marks the functions of lib/common/ that the CUDA kernels
// compile too: __host__ __device__ under nvcc, nothing for the C++ compiler.
#pragma once

#if defined(__CUDACC__)
#define LT_HOST_DEVICE __host__ __device__
#else
#define LT_HOST_DEVICE
#endif
