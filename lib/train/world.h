// The processes of one training run. A program started by mpirun or srun is
// one rank of an MPI world, initialised on first use and finalised at exit;
// any other program is a world of one, and everything runs as in a single
// process. Every rank must make the same calls in the same order (they are
// collective), as the training loop does.
//
//   lt::World& world = lt::World::get();
//   world.sum(model.params().grads());   // the ranks' gradients, summed
//   if (world.leader()) save(...);       // rank 0 writes
#pragma once
#include <cstdint>
#include <string>

#include "backend/device.h"
#include "core/tensor.h"

namespace lt {

class World {
 public:
  static World& get();
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Among the ranks on this machine: which GPU the rank takes.
  int local_rank() const { return local_rank_; }
  bool leader() const { return rank_ == 0; }
  // "rank 1 of 4" (empty for a world of one), for messages.
  std::string describe() const;

  // How tensors on a GPU are summed: NCCL, device to device, or MPI through
  // the host (for ranks that share a GPU, which NCCL refuses, or a build
  // without NCCL).
  enum class GpuSum { nccl, host };
  // The device this rank computes on, before anything is allocated there:
  // under MPI a CUDA rank takes the GPU of its rank within the machine, and
  // with GpuSum::nccl joins the ranks' NCCL communicator. Throws one line
  // when NCCL is missing or two ranks would share a GPU under it.
  void use_device(Device d, GpuSum how);

  // Sums over the ranks in place; every rank gets the same bits.
  void sum(double* values, int64_t n);
  // A float32 tensor on the host or on the rank's GPU.
  void sum(Tensor& t);
  // Whether sum(Tensor&) of a GPU tensor goes through NCCL (under mpirun
  // with one rank too: the path one GPU can measure).
  bool sums_with_nccl() const { return nccl_ != nullptr; }
  // Whether any rank passes true.
  bool any(bool value);
  // Throws lt::Error on every rank, naming what and the ranks that differ,
  // unless every rank passes the same value.
  void check_same(uint64_t value, const std::string& what);
  // Ends every rank at once with this exit status (after an error on one
  // rank, which the others, waiting in a collective, would never see).
  [[noreturn]] void abort(int status);

  World(const World&) = delete;
  World& operator=(const World&) = delete;

 private:
  World();
  ~World();
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool mpi_ = false;
  void* nccl_ = nullptr;  // the communicator (GpuSum::nccl), alive until exit
  Tensor staging_;        // GpuSum::host: device sums on the host
};

// A 64-bit checksum of a float32 tensor's bits (host or device).
uint64_t checksum(const Tensor& t);

}  // namespace lt
