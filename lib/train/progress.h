// Progress on stderr for the command-line tools: a bar redrawn in place when
// stderr is a terminal, otherwise a plain line every few seconds so logs stay
// readable; nothing at all with --quiet.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace lt {

inline bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

class Progress {
 public:
  // first: units already done before this run (a resumed training), so the
  // ETA extrapolates from this run's pace only.
  Progress(int64_t total, bool quiet, double plain_interval_s = 10.0, int64_t first = 0)
      : total_(total), first_(first), quiet_(quiet), tty_(stderr_is_terminal()), interval_(plain_interval_s),
        start_(clock::now()), last_(start_) {}

  // done of total units; text is appended (e.g. "loss 0.91 bpd 1.31 12.3 img/s").
  void update(int64_t done, const std::string& text, bool force = false) {
    if (quiet_) return;
    auto now = clock::now();
    double since = std::chrono::duration<double>(now - last_).count();
    if (tty_ ? since < 0.1 && !force : since < interval_ && !force) return;
    last_ = now;
    double elapsed = std::chrono::duration<double>(now - start_).count();
    double frac = total_ > 0 ? double(done) / double(total_) : 0.0;
    std::string eta = done > first_ && frac < 1
                          ? format_seconds(elapsed / double(done - first_) * double(total_ - done))
                          : "--";
    if (tty_) {
      const int width = 24;
      int fill = int(frac * width + 0.5);
      std::fprintf(stderr, "\r\033[K[%s%s] %lld/%lld %s ETA %s", std::string(fill, '#').c_str(),
                   std::string(width - fill, '.').c_str(), (long long)done, (long long)total_, text.c_str(),
                   eta.c_str());
    } else {
      std::fprintf(stderr, "%lld/%lld %s ETA %s\n", (long long)done, (long long)total_, text.c_str(), eta.c_str());
    }
    std::fflush(stderr);
  }
  // Ends the in-place line so later output starts on a fresh line.
  void finish() {
    if (!quiet_ && tty_) std::fputc('\n', stderr);
  }
  double elapsed_s() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

  static std::string format_seconds(double s) {
    char buf[32];
    long long t = (long long)(s + 0.5);
    if (t >= 3600)
      std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, t / 60 % 60);
    else
      std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
    return buf;
  }

 private:
  using clock = std::chrono::steady_clock;
  int64_t total_, first_;
  bool quiet_, tty_;
  double interval_;
  clock::time_point start_, last_;
};

}  // namespace lt
