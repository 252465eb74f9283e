#include "process_setup.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
char* openblas_get_corename(void);
// OpenBLAS's core choice, exported by its DYNAMIC_ARCH builds (Debian's):
// init chooses (OPENBLAS_CORETYPE, else the CPU) unless a core is chosen
// already, quit forgets the choice, and the library's own constructor keeps
// what was chosen before it. Weak: with another build the choice is skipped.
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace lt::app {
namespace {

// The processes reading this one's stdout or stderr through a pipe
// (`lt-asr ... | python3 ...`): started with the tool, they are busy with
// their own start-up just when it looks, though they wait on its output
// after. Their pids, at most max.
int pipe_readers(pid_t* out, int max) {
  ino_t pipes[2];
  int count = 0;
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) pipes[count++] = st.st_ino;
  }
  if (count == 0) return 0;
  DIR* proc = opendir("/proc");
  if (!proc) return 0;
  int n = 0;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0 || pid == getpid()) continue;
    char path[64], link[64];
    std::snprintf(path, sizeof path, "/proc/%ld/fd/0", pid);
    const ssize_t len = readlink(path, link, sizeof link - 1);  // another user's: not readable, left out
    if (len <= 0) continue;
    link[len] = '\0';
    unsigned long inode = 0;
    if (std::sscanf(link, "pipe:[%lu]", &inode) != 1) continue;
    if (std::find(pipes, pipes + count, ino_t(inode)) != pipes + count && n < max) out[n++] = pid_t(pid);
  }
  closedir(proc);
  return n;
}

// Whether process pid is running now: the state after its name in /proc/pid/stat.
bool running(pid_t pid) {
  char path[64], text[512];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  std::FILE* f = std::fopen(path, "r");
  if (!f) return false;
  const size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  text[n] = '\0';
  const char* name_end = std::strrchr(text, ')');  // a name may hold spaces and parentheses
  return name_end && name_end[1] == ' ' && name_end[2] == 'R';
}

// Threads of other processes running now: the kernel's count of running
// tasks (procs_running in /proc/stat, this one included), the fewest of up
// to five looks 2 ms apart, so that a moment's blip does not count, less
// the readers of its output (pipe_readers) running then. A look that sees
// none ends it: an idle machine costs one read.
int other_running_threads() {
  int fewest = 1 << 30;
  pid_t readers[8];
  int reader_count = -1;  // looked for once another thread is seen
  for (int look = 0; look < 5 && fewest > 0; ++look) {
    if (look) usleep(2000);
    std::FILE* f = std::fopen("/proc/stat", "r");
    if (!f) return 0;
    char line[256];
    int n = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "procs_running %d", &n) == 1) break;
    std::fclose(f);
    if (n < 1) return 0;
    int others = n - 1;
    if (others > 0 && reader_count < 0) reader_count = pipe_readers(readers, 8);
    for (int i = 0; i < reader_count && others > 0; ++i) others -= running(readers[i]);
    fewest = std::min(fewest, others);
  }
  return fewest;
}

void choose_openblas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") || !gotoblas_dynamic_init || !gotoblas_dynamic_quit) return;
  gotoblas_dynamic_init();
  const char* core = openblas_get_corename();
  if (!core || std::strcmp(core, "Prescott") != 0) return;
  __builtin_cpu_init();  // its own constructor has not run yet
  const char* better = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    better = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    better = "Haswell";
  if (!better) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
}

}  // namespace

void prepare_process(UnderLoad threads, char** argv, char** envp) {
  environ = envp;  // getenv and setenv work from here; the C library's initialiser sets it again
  signal(SIGXFSZ, SIG_IGN);
  if (std::getenv("LT_NO_REEXEC")) return;
  choose_openblas_core();
  bool changed = false;
  const int others = other_running_threads();
  if (others > 0 && !std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
    changed |= setenv("OMP_WAIT_POLICY", "passive", 1) == 0;
  if (others > 0 && threads == UnderLoad::free_cores && !std::getenv("OMP_NUM_THREADS")) {
    cpu_set_t cpus;
    const int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    char count[16];
    std::snprintf(count, sizeof count, "%d", std::max(1, cores - others));
    changed |= setenv("OMP_NUM_THREADS", count, 1) == 0;
  }
  if (!changed) return;
  setenv("LT_NO_REEXEC", "1", 1);  // once: never loop
  // By its own path, not /proc/self/exe, which would rename the process
  // "exe" in ps, top, pgrep and killall. Returns only on failure: carry on.
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  execv(self, argv);
}

}  // namespace lt::app
