// Output paths are checked before any work starts, so a typo costs no time
// and leaves nothing behind.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tool_error.h"

namespace lt::app {

// Throws unless path's folder exists and is writable.
inline void check_output_file(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  check(std::filesystem::is_directory(parent), path + ": folder " + parent.string() + " does not exist");
  check(access(parent.c_str(), W_OK) == 0, path + ": folder " + parent.string() + " is not writable");
}

// Creates folder (and its parents) unless it exists; throws naming it.
inline void create_output_folder(const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  check(!ec && std::filesystem::is_directory(folder), folder + ": cannot create the output folder");
}

}  // namespace lt::app
