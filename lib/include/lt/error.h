// lt::Error: the one exception type of the library. Its message is a single
// line that names the file, tensor or shape at fault, so a tool can print it
// as is and exit non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace lt {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws lt::Error(message) when cond is false. A message built by
// concatenation is built even when cond holds: in per-frame or per-element
// code, write `if (!cond) throw Error(...)` instead.
inline void check(bool cond, const std::string& message) {
  if (!cond) throw Error(message);
}
// A literal makes no string unless it is thrown.
inline void check(bool cond, const char* message) {
  if (!cond) throw Error(message);
}

}  // namespace lt
