// World: the ranks of a run over MPI (llm.c's way: MPI places and connects
// the processes), or a world of one. A process counts as launched by MPI when
// its launcher left the variables Open MPI, MPICH/Hydra, PMIx or Slurm's PMI
// set; only then is the MPI module (liblt-mpi.so, mpi/mpi_table.h) loaded and
// MPI initialised, so a plain run never loads libmpi.
#include "train/world.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/dispatch.h"
#include "common/error.h"

#ifdef LT_WITH_MPI
#include <unistd.h>

#include "backend/loaded_from.h"
#include "mpi_table.h"
#endif

namespace lt {

namespace {
const char* const kLaunchVariables[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};

const char* launched_by() {
  for (const char* v : kLaunchVariables)
    if (std::getenv(v)) return v;
  return nullptr;
}

#ifdef LT_WITH_MPI
// The module, loaded by the first World under a launcher.
const mpi::MpiTable* mpi_calls = nullptr;

const mpi::MpiTable& load_mpi(const char* launcher) {
  const LoadedModule m = load_module({"liblt-mpi.so", "the MPI module", "LT_MPI_MODULE", LT_MPI_MODULE_INSTALLED,
                                      LT_MPI_MODULE_BUILT, mpi::kMpiTableEntry, true});
  const std::string started = std::string("started by an MPI launcher (") + launcher + " is set), but ";
  check(m.entry != nullptr, started + m.why);
  const mpi::MpiTable* table =
      reinterpret_cast<mpi::MpiTableEntry>(m.entry)(mpi::kMpiTableVersion, sizeof(mpi::MpiTable));
  check(table != nullptr, started + "the MPI module " + m.path + " belongs to another version of lt (rebuild or reinstall it)");
  return *table;
}

void mpi_check(int code, const char* what) {
  if (code == 0) return;
  char text[512] = {};
  mpi_calls->error_text(code, text, int(sizeof text));
  throw Error(std::string(what) + ": " + text);
}
#endif
}  // namespace

World& World::get() {
  static World world;
  return world;
}

World::World() {
  const char* launcher = launched_by();
  if (!launcher) return;
#ifdef LT_WITH_MPI
  mpi_calls = &load_mpi(launcher);
  mpi_check(mpi_calls->init(&rank_, &size_, &local_rank_), "MPI_Init_thread");
  mpi_ = true;
#else
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE") ? std::getenv("OMPI_COMM_WORLD_SIZE") : std::getenv("PMI_SIZE");
  check(size == nullptr || std::atoi(size) <= 1,
        std::string("started by an MPI launcher (") + launcher + " is set) as one of " + size +
            " processes, but this lt was built without MPI: install libopenmpi-dev and configure with -DLT_MPI=ON");
#endif
}

World::~World() {
#ifdef LT_WITH_MPI
  if (mpi_) mpi_calls->finalize();
#endif
}

std::string World::describe() const {
  return size_ > 1 ? "rank " + std::to_string(rank_) + " of " + std::to_string(size_) : "";
}

void World::sum(double* values, int64_t n) {
  if (size_ == 1 || n == 0) return;
#ifdef LT_WITH_MPI
  mpi_check(mpi_calls->sum_doubles(values, int(n)), "MPI_Allreduce");
#endif
}

void World::use_device(Device d, GpuSum how) {
  if (d != Device::cuda || !mpi_) return;  // a process alone keeps the GPU CUDA_VISIBLE_DEVICES gives it
#if defined(LT_WITH_MPI) && defined(LT_WITH_CUDA)
  cuda::select_device(local_rank_);
  if (how != GpuSum::nccl) return;
  const std::string missing = cuda::nccl_unavailable_reason();
  check(missing.empty(), missing + "; or sum through the host with --gpu-sum host");
  // NCCL refuses two ranks on one GPU (or waits for them): say so first.
  constexpr int kHost = 64, kBus = 32;
  char mine[kHost + kBus] = {};
  gethostname(mine, kHost - 1);
  const std::string bus = cuda::device_bus_id();
  std::snprintf(mine + kHost, kBus, "%s", bus.c_str());
  std::vector<char> all(size_t(size_) * sizeof mine);
  mpi_check(mpi_calls->gather_bytes(mine, int(sizeof mine), all.data()), "MPI_Allgather");
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && std::memcmp(&all[size_t(r) * sizeof mine], mine, sizeof mine) == 0)
      throw Error("ranks " + std::to_string(std::min(r, rank_)) + " and " + std::to_string(std::max(r, rank_)) +
                  " share GPU " + bus + " on " + mine + ", which NCCL refuses: run one rank per GPU, or sum "
                  "through the host with --gpu-sum host");
  char id[kernels::kNcclIdBytes] = {};
  if (leader()) cuda::nccl_unique_id(id);
  mpi_check(mpi_calls->broadcast_bytes(id, int(sizeof id), 0), "MPI_Bcast");
  nccl_ = cuda::nccl_join(id, size_, rank_);
#else
  (void)how;
#endif
}

void World::sum(Tensor& t) {
  check(t.dtype() == DType::f32, "World::sum needs a float32 tensor");
#ifdef LT_WITH_CUDA
  // Under mpirun -np 1 too: the path a single GPU can test.
  if (nccl_ && t.device() == Device::cuda) return cuda::nccl_sum(nccl_, t.data(), t.numel());
#endif
  if (size_ == 1) return;
  Tensor host = t;
  if (t.device() != Device::cpu) {
    if (staging_.numel() != t.numel()) staging_ = Tensor::empty({t.numel()});
    staging_.copy_from(t);
    host = staging_;
  }
#ifdef LT_WITH_MPI
  // MPI counts are int: a buffer over 2^31 floats goes in pieces.
  constexpr int64_t kPiece = int64_t(1) << 30;
  for (int64_t at = 0; at < host.numel(); at += kPiece)
    mpi_check(mpi_calls->sum_floats(host.data() + at, int(std::min(kPiece, host.numel() - at))), "MPI_Allreduce");
#endif
  if (t.device() != Device::cpu) t.copy_from(host);
}

bool World::any(bool value) {
  double v = value ? 1 : 0;
  sum(&v, 1);
  return v > 0;
}

void World::check_same(uint64_t value, const std::string& what) {
  if (size_ == 1) return;
#ifdef LT_WITH_MPI
  std::vector<uint64_t> all(size_t(size_), 0);
  mpi_check(mpi_calls->gather_bytes(&value, int(sizeof value), all.data()), "MPI_Allgather");
  std::string differ;
  for (int r = 1; r < size_; ++r)
    if (all[size_t(r)] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  check(differ.empty(), what + " differ between ranks: rank " + differ + " against rank 0");
#endif
}

void World::abort(int status) {
#ifdef LT_WITH_MPI
  if (mpi_ && size_ > 1) mpi_calls->abort(status);
#endif
  std::exit(status);
}

uint64_t checksum(const Tensor& t) {
  check(t.dtype() == DType::f32, "checksum needs a float32 tensor");
  const std::vector<float> v = t.to_vector();
  // Four independent lanes (multiply-xorshift) so the loop is not one long
  // dependency chain; the bits, not the values, so -0 and NaNs count.
  uint64_t lane[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull};
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, &v[i + 2 * size_t(k)], 8);
      lane[k] = (lane[k] ^ w) * 0x9E3779B97F4A7C15ull;
      lane[k] ^= lane[k] >> 29;
    }
  for (; i < v.size(); ++i) {
    uint32_t w;
    std::memcpy(&w, &v[i], 4);
    lane[0] = ((lane[0] ^ w) * 0x9E3779B97F4A7C15ull) ^ (lane[0] >> 29);
  }
  uint64_t h = v.size();
  for (uint64_t l : lane) h = (h ^ l) * 0xBF58476D1CE4E5B9ull ^ (h >> 31);
  return h;
}

}  // namespace lt
