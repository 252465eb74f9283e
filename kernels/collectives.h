// --- collectives.cu ---
#pragma once
#include <cstdint>
#include <string>

namespace lt::kernels {
// Makes GPU ordinal % count current for every later call of this process (a
// rank takes the GPU of its rank within the machine); returns the one taken.
int select_device(int ordinal);
// The current GPU's PCI bus id ("0000:3b:00.0"): ranks on one machine
// compare these to find two sharing a GPU.
std::string device_bus_id();

// NCCL, from the CUDA toolkit, when the module was built with it: rank 0
// makes the communicator's id, MPI carries it to the others, every rank
// joins, and sums run in place on the default stream. nccl_unavailable_reason
// is "" when NCCL was built in, else one line saying why not. The
// communicator lives until the process ends.
constexpr int kNcclIdBytes = 128;
std::string nccl_unavailable_reason();
void nccl_unique_id(char* id);                             // kNcclIdBytes
void* nccl_join(const char* id, int ranks, int rank);      // the communicator
void nccl_sum(void* comm, float* data, int64_t n);
}  // namespace lt::kernels
