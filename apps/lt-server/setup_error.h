// The one way lt-server refuses to start: a flag, a file or an address it
// cannot use, said in one line, which main prints before it exits 1.
#pragma once
#include <stdexcept>
#include <string>

namespace lt::server {

struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws SetupError(message) unless `ok`.
inline void check_setup(bool ok, const std::string& message) {
  if (!ok) throw SetupError(message);
}

}  // namespace lt::server
