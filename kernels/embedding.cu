// Embedding on the GPU. A search kernel finds the first out-of-range id with
// atomicMin on its position in a one-word device flag, copied back so the
// caller can throw before any gather reads outside the table. The gather and
// the scatter-add run one thread per output element (coalesced along C).
#include <algorithm>

#include "cuda_check.cuh"
#include "embedding.h"
#include "kernels.h"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
unsigned grid_for(int64_t n) { return std::min<unsigned>(blocks_for(n, kThreads), 1u << 16); }
constexpr unsigned long long kNone = ~0ull;

// One word of device memory, allocated on first use and kept.
unsigned long long* bad_position_flag() {
  static unsigned long long* flag = [] {
    unsigned long long* p = nullptr;
    LT_CUDA_CHECK(cudaMalloc(&p, sizeof *p));
    return p;
  }();
  return flag;
}

__global__ void find_bad_id_kernel(const int32_t* ids, long long n, long long V, unsigned long long* first) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    if (ids[i] < 0 || ids[i] >= V) atomicMin(first, (unsigned long long)i);
}

__global__ void gather_kernel(const int32_t* ids, const float* table, float* y, long long n, long long C) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n * C; e += (long long)gridDim.x * blockDim.x)
    y[e] = table[ids[e / C] * C + e % C];
}

__global__ void scatter_add_kernel(const int32_t* ids, const float* dy, float* dtable, long long n, long long C) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n * C; e += (long long)gridDim.x * blockDim.x)
    atomicAdd(dtable + ids[e / C] * C + e % C, dy[e]);
}

}  // namespace

int64_t embedding_find_bad_id(const int32_t* ids, int64_t n, int64_t V, int32_t* bad_id) {
  if (n == 0) return -1;
  unsigned long long* flag = bad_position_flag();
  LT_CUDA_CHECK(cudaMemsetAsync(flag, 0xff, sizeof(unsigned long long), stream()));  // kNone
  find_bad_id_kernel<<<grid_for(n), kThreads, 0, stream()>>>(ids, n, V, flag);
  LT_CUDA_LAUNCH_CHECK();
  unsigned long long first = kNone;
  memcpy_d2h(&first, flag, sizeof first);
  if (first == kNone) return -1;
  memcpy_d2h(bad_id, ids + first, sizeof(int32_t));
  return static_cast<int64_t>(first);
}

void embedding_forward(const int32_t* ids, const float* table, float* y, int64_t n, int64_t C) {
  if (n * C == 0) return;
  gather_kernel<<<grid_for(n * C), kThreads, 0, stream()>>>(ids, table, y, n, C);
  LT_CUDA_LAUNCH_CHECK();
}

void embedding_backward(const int32_t* ids, const float* dy, float* dtable, int64_t n, int64_t C) {
  if (n * C == 0) return;
  scatter_add_kernel<<<grid_for(n * C), kThreads, 0, stream()>>>(ids, dy, dtable, n, C);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
