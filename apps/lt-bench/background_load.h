// Busy processes beside a benchmark (lt-bench --background-load K): what a
// shared machine looks like to lt, so that its defaults can be measured
// under load as well as idle. The load starts before anything else, so that
// the tool's start-up sees it as it would see a real one (prepare_process
// looks at the machine); it survives the tool's re-execution (the new image
// adopts the processes named in LT_BACKGROUND_PIDS) and dies with the tool.
#pragma once
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace lt::bench {

class BackgroundLoad {
 public:
  // K from argv's --background-load K (or =K); 0 when absent or malformed
  // (the option table then says what is wrong).
  static int requested(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--background-load" && i + 1 < argc) return std::atoi(argv[i + 1]);
      if (a.rfind("--background-load=", 0) == 0) return std::atoi(a.c_str() + 18);
    }
    return 0;
  }

  explicit BackgroundLoad(int k) {
    if (const char* pids = std::getenv("LT_BACKGROUND_PIDS")) {  // started before a re-execution
      for (const char* p = pids; *p;) {
        pids_.push_back(pid_t(std::strtol(p, const_cast<char**>(&p), 10)));
        while (*p == ',') ++p;
      }
      return;
    }
    if (k <= 0 || k > 64) return;
    std::string list;
    for (int i = 0; i < k; ++i) {
      const pid_t pid = fork();
      if (pid < 0) break;
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // lt-bench gone: so is this
        for (volatile uint64_t x = 0;; x = x + 1) {
        }
      }
      pids_.push_back(pid);
      list += (list.empty() ? "" : ",") + std::to_string(pid);
    }
    setenv("LT_BACKGROUND_PIDS", list.c_str(), 1);
    usleep(50000);  // running before anyone looks
  }
  ~BackgroundLoad() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;
  int count() const { return int(pids_.size()); }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace lt::bench
