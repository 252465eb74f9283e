// Wall-clock seconds for the timings the library reports (recognition's parts).
#pragma once
#include <chrono>

namespace lt {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace lt
