// Device selection, memory accounting and build information. Everything that
// touches the CUDA runtime goes through the CUDA module (cuda_module.h),
// loaded when a CUDA device is first asked for, and is compiled only with
// LT_WITH_CUDA; without it, asking for cuda says the build lacks it.
#include <cpuid.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "backend/device_memory.h"
#include "common/error.h"
#include "lt_build_commit.h"  // generated at build time: LT_GIT_COMMIT
#ifdef LT_WITH_CUDA
#include "backend/cuda_module.h"
#endif

extern "C" void openblas_set_num_threads(int);

namespace lt {
namespace {
struct Counter {
  std::atomic<size_t> now{0}, peak{0};
  size_t limit = 0;  // set_memory_limit's; 0: none
  void add(size_t b) {
    size_t n = now += b;
    size_t p = peak.load();
    while (n > p && !peak.compare_exchange_weak(p, n)) {
    }
  }
};
Counter counters[2];
int g_threads = 0;
Counter& counter(Device d) { return counters[d == Device::cuda ? 1 : 0]; }
}  // namespace

const char* device_name(Device d) { return d == Device::cuda ? "cuda" : "cpu"; }

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  throw Error("unknown device '" + name + "' (expected cpu or cuda)");
}

// OpenMP's own default (OMP_NUM_THREADS or every core), read once at start-up:
// omp_get_max_threads() itself changes whenever OpenBLAS is told to use one
// thread for a while (SingleThreadedBlas), and must not become our default.
static const int g_default_threads = omp_get_max_threads();

void set_num_threads(int n) {
  g_threads = n > 0 ? n : g_default_threads;
  omp_set_num_threads(g_threads);
  openblas_set_num_threads(g_threads);
}

int num_threads() { return g_threads > 0 ? g_threads : g_default_threads; }

static bool g_cuda_graphs = true;
void set_cuda_graphs(bool on) { g_cuda_graphs = on; }
bool cuda_graphs() { return g_cuda_graphs; }

std::string cuda_unavailable_reason() {
#ifdef LT_WITH_CUDA
  const std::string& why = cuda::module_unavailable_reason();
  return why.empty() ? cuda::unavailable_reason() : why;
#else
  return "this lt was built without CUDA (reconfigure with -DLT_CUDA=ON on a machine with nvcc)";
#endif
}

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

bool cpu_has_bf16() {
  static const bool has = cpu_has_avx512() && __builtin_cpu_supports("avx512bf16");
  return has;
}

bool cpu_has_amx() {
  static const bool has = [] {
    unsigned a, b, c, d;
    if (!cpu_has_bf16() || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool tile = d & (1u << 24), bf16 = d & (1u << 22);
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;  // asm/prctl.h, not in every libc's headers
    return tile && bf16 && syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return has;
}

void require_device(Device d) {
  if (d == Device::cuda) {
    std::string why = cuda_unavailable_reason();
    if (!why.empty()) throw Error("cannot use device cuda: " + why);
  }
}

void synchronize(Device d) {
#ifdef LT_WITH_CUDA
  if (d == Device::cuda) cuda::synchronize();
#else
  (void)d;
#endif
}

std::string device_description(Device d) {
  if (d == Device::cuda) {
#ifdef LT_WITH_CUDA
    if (cuda_available()) return cuda::device_name();
#endif
    return "none";
  }
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

size_t memory_in_use(Device d) { return counter(d).now; }
size_t memory_peak(Device d) { return counter(d).peak; }
void memory_reset_peak(Device d) { counter(d).peak = counter(d).now.load(); }
void set_memory_limit(Device d, size_t bytes) { counter(d).limit = bytes; }

static std::string gigabytes(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g GB", double(bytes) / 1e9);
  return s;
}

const char* build_commit() { return LT_GIT_COMMIT; }
const char* build_version() { return LT_VERSION; }
bool built_with_cuda() {
#ifdef LT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

void* device_alloc(Device d, size_t bytes) {
  void* p = nullptr;
  const Counter& c = counter(d);
  if (c.limit > 0 && c.now + bytes > c.limit)
    throw OutOfMemory(std::string("allocating ") + gigabytes(bytes) + " on " + device_name(d) + " (" +
                      gigabytes(c.now) + " in use) would pass the memory limit of " + gigabytes(c.limit));
  if (d == Device::cuda) {
    require_device(d);
#ifdef LT_WITH_CUDA
    p = cuda::malloc(bytes);
#endif
  } else {
    size_t rounded = (bytes + 63) / 64 * 64;
    p = rounded ? std::aligned_alloc(64, rounded) : nullptr;
    if (rounded && !p) throw OutOfMemory("out of host memory allocating " + std::to_string(bytes) + " bytes");
  }
  counter(d).add(bytes);
  return p;
}

void device_free(Device d, void* p, size_t bytes) noexcept {
  counter(d).now -= bytes;
#ifdef LT_WITH_CUDA
  if (d == Device::cuda) return cuda::free(p);
#endif
  std::free(p);
}

void device_copy(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (dst_dev == Device::cpu && src_dev == Device::cpu) {
    std::memmove(dst, src, bytes);
    return;
  }
#ifdef LT_WITH_CUDA
  if (dst_dev == Device::cuda && src_dev == Device::cuda) return cuda::memcpy_d2d(dst, src, bytes);
  if (dst_dev == Device::cuda) return cuda::memcpy_h2d(dst, src, bytes);
  return cuda::memcpy_d2h(dst, src, bytes);
#else
  require_device(Device::cuda);
#endif
}

void device_zero(Device d, void* p, size_t bytes) {
  if (bytes == 0) return;
#ifdef LT_WITH_CUDA
  if (d == Device::cuda) return cuda::memset_zero(p, bytes);
#endif
  require_device(d);
  std::memset(p, 0, bytes);
}

}  // namespace lt
