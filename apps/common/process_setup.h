// What every tool does first, before any work: settings that only take
// effect when a library loads are made here, and the tool re-executes itself
// once to have them. A value the user set is never touched.
//
// - SIGXFSZ ignored: a file size limit (ulimit -f) then makes a write fail
//   with EFBIG, which the writers report in one line naming the file, rather
//   than kill the tool halfway through an output.
// - OPENBLAS_CORETYPE: OpenBLAS 0.3.21 (Debian 12) does not know AMD's Zen 4
//   or 5 and falls back to its generic "Prescott" kernels, five times slower
//   than its AVX-512 ones on the same CPU; it reads the variable only when it
//   loads.
// - OMP_WAIT_POLICY: libgomp's threads spin up to 300,000 times at every
//   barrier before they sleep. On a machine whose cores run other work the
//   thread a barrier waits for is often preempted while the others spin on
//   the cores it needs: generation ran 24 times slower beside two busy
//   processes. Sleeping at once (passive) is that much faster under load but
//   25% slower on an idle machine, and shorter spins were no cure (the table
//   in docs/benchmarks.md, "Under CPU contention"). So the tool looks at the
//   machine when it starts: when other threads are running, it waits
//   passively (unless OMP_WAIT_POLICY or GOMP_SPINCOUNT say otherwise).
//   Generation, whose steps cross dozens of barriers, then also uses only
//   the cores the others leave, at least one; training, whose batch is split
//   into a few large parallel regions, runs fastest on all of them (unless
//   OMP_NUM_THREADS or -t say otherwise). A run keeps what it chose.
#pragma once
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" char* openblas_get_corename(void);

namespace lt::app {

// Threads of other processes running now: the kernel's count of running
// tasks (procs_running in /proc/stat, this one included), the fewest of a
// few looks 2 ms apart, so that a moment's blip does not count.
inline int other_running_threads() {
  int fewest = 1 << 30;
  for (int look = 0; look < 5; ++look) {
    if (look) usleep(2000);
    std::FILE* f = std::fopen("/proc/stat", "r");
    if (!f) return 0;
    char line[256];
    int n = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "procs_running %d", &n) == 1) break;
    std::fclose(f);
    if (n < 1) return 0;
    fewest = std::min(fewest, n - 1);
  }
  return fewest;
}

// How many threads a tool wants on a busy machine (above).
enum class UnderLoad { free_cores, all_cores };

inline void prepare_process(char** argv, UnderLoad threads = UnderLoad::free_cores) {
  signal(SIGXFSZ, SIG_IGN);
  if (std::getenv("LT_NO_REEXEC")) return;
  bool changed = false;
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    const char* core = openblas_get_corename();
    const char* better = nullptr;
    if (core && std::strcmp(core, "Prescott") == 0) {
      if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        better = "SkylakeX";
      else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        better = "Haswell";
    }
    if (better) changed |= setenv("OPENBLAS_CORETYPE", better, 1) == 0;
  }
  const int others = other_running_threads();
  if (others > 0 && !std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
    changed |= setenv("OMP_WAIT_POLICY", "passive", 1) == 0;
  if (others > 0 && threads == UnderLoad::free_cores && !std::getenv("OMP_NUM_THREADS")) {
    cpu_set_t cpus;
    const int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    changed |= setenv("OMP_NUM_THREADS", std::to_string(std::max(1, cores - others)).c_str(), 1) == 0;
  }
  if (!changed) return;
  setenv("LT_NO_REEXEC", "1", 1);  // once: never loop
  execv("/proc/self/exe", argv);   // returns only on failure: carry on as things are
}

}  // namespace lt::app
