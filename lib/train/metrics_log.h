// Metrics appended to a JSON-lines file (--log): one object per event, flushed
// at once so a crash or Ctrl-C keeps everything logged so far.
#pragma once
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"

namespace lt {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path) : path_(path) {
    if (path.empty()) return;
    f_ = std::fopen(path.c_str(), "a");
    check(f_ != nullptr, path + ": cannot open the metrics log for appending");
  }
  ~MetricsLog() {
    if (f_) std::fclose(f_);
  }
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const nlohmann::json& j) {
    if (!f_) return;
    std::string line = j.dump() + "\n";
    // A full disk or a file size limit stops the run with the reason.
    if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
      throw Error(path_ + ": cannot append to the metrics log: " + std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

}  // namespace lt
