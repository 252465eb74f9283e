// What every tool does before any library initialises. A function in an
// executable's .preinit_array runs before the constructors of the shared
// libraries it needs (glibc's _dl_init), so the settings that libgomp and
// OpenBLAS read when they load take effect in this process: no
// re-execution, which cost a whole second start. A value the user set is
// never touched; LT_NO_PROCESS_SETUP=1 leaves every library at its defaults.
//
// - SIGXFSZ ignored: a file size limit (ulimit -f) then makes a write fail
//   with EFBIG, which the writers report in one line naming the file, rather
//   than kill the tool halfway through an output.
// - OpenBLAS's core: OpenBLAS 0.3.21 (Debian 12) does not know AMD's Zen 4
//   or 5 and falls back to its generic "Prescott" kernels, five times slower
//   than its AVX-512 ones on the same CPU. The tool asks OpenBLAS for its
//   choice and, when it is Prescott on a CPU with AVX-512 or AVX2, has it
//   choose again with OPENBLAS_CORETYPE set (SkylakeX or Haswell).
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

namespace lt::app {

// How many threads a tool wants on a busy machine (above).
enum class UnderLoad { free_cores, all_cores };

// The settings above. Runs before C++ static objects exist: C library calls only.
void prepare_process(UnderLoad threads);

// The usual entry: LT_BEFORE_LIBRARIES(lt::app::setup_process<UnderLoad::free_cores>).
template <UnderLoad threads>
void setup_process(int, char**, char**) {
  prepare_process(threads);
}

}  // namespace lt::app

// At namespace scope in a tool's main.cpp: runs fn(argc, argv, envp) before
// any shared library's constructor and before main.
#define LT_BEFORE_LIBRARIES(fn) \
  __attribute__((section(".preinit_array"), used)) static void (*lt_before_libraries_)(int, char**, char**) = fn
