// liblt-mpi.so: the MPI calls of mpi_table.h over the MPI it is linked with.
#include <mpi.h>

#include "mpi_table.h"

namespace {

int init(int* rank, int* size, int* local_rank) {
  int provided = 0;
  if (int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); code != MPI_SUCCESS) return code;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  MPI_Comm node;
  if (int code = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node);
      code != MPI_SUCCESS)
    return code;
  MPI_Comm_rank(node, local_rank);
  return MPI_Comm_free(&node);
}

int finalize() { return MPI_Finalize(); }

int sum_doubles(double* values, int count) {
  return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

int sum_floats(float* values, int count) {
  return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

int gather_bytes(const void* mine, int bytes, void* all) {
  return MPI_Allgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, MPI_COMM_WORLD);
}

int broadcast_bytes(void* data, int bytes, int root) { return MPI_Bcast(data, bytes, MPI_BYTE, root, MPI_COMM_WORLD); }

void abort_world(int status) { MPI_Abort(MPI_COMM_WORLD, status); }

void error_text(int code, char* text, int size) {
  char buffer[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(code, buffer, &n) != MPI_SUCCESS) n = 0;
  if (size <= 0) return;
  if (n > size - 1) n = size - 1;
  for (int i = 0; i < n; ++i) text[i] = buffer[i];
  text[n] = '\0';
}

const lt::mpi::MpiTable kTable = {init,         finalize,        sum_doubles, sum_floats,
                                  gather_bytes, broadcast_bytes, abort_world, error_text};

}  // namespace

extern "C" __attribute__((visibility("default"))) const lt::mpi::MpiTable* lt_mpi_table(int version, size_t size) {
  return version == lt::mpi::kMpiTableVersion && size == sizeof(lt::mpi::MpiTable) ? &kTable : nullptr;
}
