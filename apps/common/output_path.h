// Output paths are checked before any work starts, so a typo costs no time
// and leaves nothing behind.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

#include "lt/error.h"

namespace lt::app {

// Throws unless path's folder exists and is writable.
inline void check_output_file(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  check(std::filesystem::is_directory(parent), path + ": folder " + parent.string() + " does not exist");
  check(access(parent.c_str(), W_OK) == 0, path + ": folder " + parent.string() + " is not writable");
}

}  // namespace lt::app
