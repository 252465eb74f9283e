// Busy processes beside a benchmark (lt-bench --background-load K): what a
// shared machine looks like to lt, so that its defaults can be measured
// under load as well as idle. Each child spins until the benchmark ends; it
// dies with lt-bench, however that ends.
#pragma once
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "lt/error.h"

namespace lt::bench {

class BackgroundLoad {
 public:
  explicit BackgroundLoad(int k) {
    for (int i = 0; i < k; ++i) {
      const pid_t pid = fork();
      check(pid >= 0, "--background-load: cannot start a busy process");
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // lt-bench gone: so is this
        for (volatile uint64_t x = 0;; x = x + 1) {
        }
      }
      pids_.push_back(pid);
    }
  }
  ~BackgroundLoad() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;

 private:
  std::vector<pid_t> pids_;
};

}  // namespace lt::bench
