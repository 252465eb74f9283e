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
// - GOMP_SPINCOUNT: libgomp's threads spin up to 300,000 times at every
//   barrier before they sleep. On a machine whose cores run other work the
//   thread a barrier waits for is often preempted, and the spinning ones
//   take the cores it needs: generation ran 60 times slower beside two busy
//   processes. A short spin keeps idle speed and sleeps soon under load
//   (docs/benchmarks.md, "Under CPU contention"). OMP_WAIT_POLICY, if set,
//   decides instead.
#pragma once
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern "C" char* openblas_get_corename(void);

namespace lt::app {

// Spins of an OpenMP thread at a barrier before it sleeps (libgomp's default: 300,000).
inline constexpr const char* kSpinCount = "30000";

inline void prepare_process(char** argv) {
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
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
    changed |= setenv("GOMP_SPINCOUNT", kSpinCount, 1) == 0;
  if (!changed) return;
  setenv("LT_NO_REEXEC", "1", 1);  // once: never loop
  execv("/proc/self/exe", argv);   // returns only on failure: carry on as things are
}

}  // namespace lt::app
