// MPI's interface to the core library: the few calls a run over many
// processes makes (train/world.h), as one table. They live in a module,
// liblt-mpi.so, the one part of lt linked with libmpi, which World loads with
// dlopen only when a launcher (mpirun, srun) started the process. So neither
// liblt.so.0 nor a tool needs libmpi: an inference program never loads Open
// MPI (which costs a millisecond at start), and a program with an MPI of its
// own (mpi4py over MPICH, say) does not get a second one. The module exports
// one C symbol, kMpiTableEntry, which returns the table.
#pragma once
#include <cstddef>

namespace lt::mpi {

// Every call but abort returns 0, or an MPI error code that error_text names.
struct MpiTable {
  // MPI_Init_thread (funneled), then the world's rank and size and the rank
  // among the processes of this node.
  int (*init)(int* rank, int* size, int* local_rank);
  int (*finalize)();
  int (*sum_doubles)(double* values, int count);  // MPI_Allreduce in place, MPI_SUM
  int (*sum_floats)(float* values, int count);
  int (*gather_bytes)(const void* mine, int bytes, void* all);  // MPI_Allgather: all holds size x bytes
  int (*broadcast_bytes)(void* data, int bytes, int root);
  void (*abort)(int status);                            // MPI_Abort over the world
  void (*error_text)(int code, char* text, int size);   // MPI_Error_string
};

inline constexpr int kMpiTableVersion = 1;
inline constexpr const char* kMpiTableEntry = "lt_mpi_table";
// The table, or nullptr when the module was built for another version or size of it.
using MpiTableEntry = const MpiTable* (*)(int version, size_t size);

}  // namespace lt::mpi
