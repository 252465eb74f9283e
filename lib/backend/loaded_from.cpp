// own_folder() and load_module(): where lt is, and its modules beside it.
#include "backend/loaded_from.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace lt {

std::string own_folder() {
  Dl_info info{};
  std::string file;
  // dladdr names the main program by its argv[0], which has no folder when
  // it was found on PATH; /proc/self/exe is its real path.
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) && info.dli_fname &&
      std::string(info.dli_fname).find('/') != std::string::npos)
    file = info.dli_fname;
  else
    file = "/proc/self/exe";
  char real[PATH_MAX];
  if (!realpath(file.c_str(), real)) return "";
  std::string path = real;
  return path.substr(0, path.rfind('/'));
}

LoadedModule load_module(const ModuleSearch& search) {
  std::vector<std::string> places;
  if (const char* set = std::getenv(search.variable); set && *set) {
    places.push_back(set);
  } else {
    if (std::string here = own_folder(); !here.empty()) {
      places.push_back(here + "/" + search.file);
      places.push_back(here + "/../lib/" + search.file);
    }
    places.push_back(search.installed);
    places.push_back(search.built);
  }
  for (const std::string& path : places) {
    if (access(path.c_str(), F_OK) != 0) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | (search.global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!handle) return {nullptr, path, "cannot load " + search.what + ": " + dlerror()};
    void* entry = dlsym(handle, search.entry);
    if (!entry) return {nullptr, path, search.what + " " + path + " belongs to another version of lt (rebuild or reinstall it)"};
    return {entry, path, ""};
  }
  std::string looked;
  for (const std::string& path : places) looked += (looked.empty() ? "" : ", ") + path;
  return {nullptr, "", search.what + " " + search.file + " is not installed (looked for " + looked + ")"};
}

}  // namespace lt
