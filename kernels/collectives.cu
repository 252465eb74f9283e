// The GPU's share of a run over many ranks: which device a rank takes, and
// NCCL's all-reduce (llm.c's arrangement: MPI starts the ranks and carries
// NCCL's id; NCCL sums the gradients device to device).
#include <cstring>

#include "collectives.h"
#include "cuda_check.cuh"

#ifdef LT_WITH_NCCL
#include <nccl.h>
static_assert(NCCL_UNIQUE_ID_BYTES == lt::kernels::kNcclIdBytes);

#define LT_NCCL_CHECK(call)                                                                                   \
  do {                                                                                                        \
    ncclResult_t r_ = (call);                                                                                 \
    if (r_ != ncclSuccess)                                                                                    \
      throw lt::Error(std::string("NCCL error: ") + ncclGetErrorString(r_) + " (" #call "): " +              \
                      ncclGetLastError(nullptr));                                                             \
  } while (0)
#endif

namespace lt::kernels {

int select_device(int ordinal) {
  int n = 0;
  LT_CUDA_CHECK(cudaGetDeviceCount(&n));
  const int device = ordinal % n;
  LT_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

std::string device_bus_id() {
  int device = 0;
  LT_CUDA_CHECK(cudaGetDevice(&device));
  char id[32] = {};
  LT_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof id, device));
  return id;
}

#ifdef LT_WITH_NCCL
std::string nccl_unavailable_reason() { return ""; }

void nccl_unique_id(char* id) {
  ncclUniqueId u;
  LT_NCCL_CHECK(ncclGetUniqueId(&u));
  std::memcpy(id, u.internal, kNcclIdBytes);
}

void* nccl_join(const char* id, int ranks, int rank) {
  ncclUniqueId u;
  std::memcpy(u.internal, id, kNcclIdBytes);
  ncclComm_t comm = nullptr;
  LT_NCCL_CHECK(ncclCommInitRank(&comm, ranks, u, rank));
  return comm;
}

void nccl_sum(void* comm, float* data, int64_t n) {
  LT_NCCL_CHECK(ncclAllReduce(data, data, size_t(n), ncclFloat, ncclSum, static_cast<ncclComm_t>(comm), stream()));
}

#else
std::string nccl_unavailable_reason() {
  return "this lt's CUDA module was built without NCCL (configure with NCCL installed and -DLT_NCCL=ON)";
}
void nccl_unique_id(char*) { throw lt::Error(nccl_unavailable_reason()); }
void* nccl_join(const char*, int, int) { throw lt::Error(nccl_unavailable_reason()); }
void nccl_sum(void*, float*, int64_t) { throw lt::Error(nccl_unavailable_reason()); }
#endif

}  // namespace lt::kernels
