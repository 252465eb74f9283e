// What every tool does before any library initialises. A function in an
// executable's .preinit_array runs before the constructors of the shared
// libraries it needs (glibc's _dl_init), and the settings below are read by
// OpenBLAS and libgomp in theirs. A value the user set is never touched;
// LT_NO_REEXEC=1 leaves every library at its defaults.
//
// - SIGXFSZ ignored: a file size limit (ulimit -f) then makes a write fail
//   with EFBIG, which the writers report in one line naming the file, rather
//   than kill the tool halfway through an output.
// - OpenBLAS's core: OpenBLAS 0.3.21 (Debian 12) does not know AMD's Zen 4
//   or 5 and falls back to its generic "Prescott" kernels, five times slower
//   than its AVX-512 ones on the same CPU. The tool asks OpenBLAS for its
//   choice and, when it is Prescott on a CPU with AVX-512 or AVX2, has it
//   choose again with OPENBLAS_CORETYPE set (SkylakeX or Haswell), in this
//   process.
// - OMP_WAIT_POLICY: libgomp's threads spin up to 300,000 times at every
//   barrier before they sleep. On a machine whose cores run other work the
//   thread a barrier waits for is often preempted while the others spin on
//   the cores it needs: generation ran 24 times slower beside two busy
//   processes. Sleeping at once (passive) is that much faster under load but
//   25% slower on an idle machine, and shorter spins were no cure (the table
//   in docs/benchmarks.md, "Under CPU contention"). So the tool looks at the
//   machine when it starts: when other threads are running, it waits
//   passively (unless OMP_WAIT_POLICY or GOMP_SPINCOUNT say otherwise).
//   The readers of its stdout or stderr through a pipe do not count: they
//   start beside it and then wait on its output.
//   Generation, whose steps cross dozens of barriers, then also uses only
//   the cores the others leave, at least one; training, whose batch is split
//   into a few large parallel regions, runs fastest on all of them (unless
//   OMP_NUM_THREADS or -t say otherwise). A run keeps what it chose.
//   libgomp reads these from the environment only, and the C library,
//   initialised after this function, starts again from the environment the
//   process was given: so a busy machine costs one re-execution, made here,
//   before any library's constructor ran (docs/benchmarks.md, "Start-up").
#pragma once

namespace lt::app {

// How many threads a tool wants on a busy machine (above).
enum class UnderLoad { free_cores, all_cores };

// The settings above, from the process's arguments and environment as the
// .preinit_array function receives them. Runs before C++ static objects
// and the C library's own initialisation: C library calls only.
void prepare_process(UnderLoad threads, char** argv, char** envp);

// The usual entry: LT_BEFORE_LIBRARIES(lt::app::setup_process<UnderLoad::free_cores>).
template <UnderLoad threads>
void setup_process(int, char** argv, char** envp) {
  prepare_process(threads, argv, envp);
}

}  // namespace lt::app

// At namespace scope in a tool's main.cpp: runs fn(argc, argv, envp) before
// any shared library's constructor and before main.
#define LT_BEFORE_LIBRARIES(fn) \
  __attribute__((section(".preinit_array"), used)) static void (*lt_before_libraries_)(int, char**, char**) = fn
