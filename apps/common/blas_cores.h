// What every tool does first (prepare_process), and the BLAS in use.
//
// A file size limit (ulimit -f) must make a write fail with EFBIG, which the
// writers report in one line naming the file, rather than kill the tool with
// SIGXFSZ halfway through an output.
//
// OpenBLAS 0.3.21 (Debian 12) does not know AMD's Zen 4 or 5 and falls back to its
// generic "Prescott" kernels, five times slower than its AVX-512 ones on the
// same CPU. OpenBLAS reads OPENBLAS_CORETYPE only when it is loaded, so when
// it reports Prescott on a CPU with AVX-512 (or AVX2) the tool sets the
// variable and re-executes itself once. A value the user set is never touched.
#pragma once
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

extern "C" char* openblas_get_corename(void);

namespace lt::app {

inline void prepare_process(char** argv) {
  signal(SIGXFSZ, SIG_IGN);
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("LT_NO_BLAS_REEXEC")) return;
  const char* core = openblas_get_corename();
  if (!core || std::strcmp(core, "Prescott") != 0) return;
  const char* better = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    better = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    better = "Haswell";
  if (!better) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  setenv("LT_NO_BLAS_REEXEC", "1", 1);  // never loop, whatever OpenBLAS does with it
  execv("/proc/self/exe", argv);        // returns only on failure: carry on with Prescott
}

// "OpenBLAS Cooperlake": the kernels in use, for banners and benchmark rows.
inline std::string blas_description() {
  const char* core = openblas_get_corename();
  return std::string("OpenBLAS ") + (core ? core : "unknown");
}

}  // namespace lt::app
