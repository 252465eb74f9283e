// Finds and loads liblt-cuda.so once. Places, in order: $LT_CUDA_MODULE (a
// path: the only place looked at when set); beside the file that holds this
// code (a tool, or liblt.so) and in its ../lib (an installed tree moved
// elsewhere); the install prefix's library folder; the build folder it was
// built in (tools and tests run from a build tree).
#ifdef LT_WITH_CUDA
#include "backend/cuda_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <vector>

#include "core/error.h"

namespace lt::cuda {
namespace {

constexpr const char* kModuleName = "liblt-cuda.so";

// The folder of the file this code was loaded from.
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

std::vector<std::string> candidates() {
  if (const char* set = std::getenv("LT_CUDA_MODULE"); set && *set) return {set};
  std::vector<std::string> places;
  if (std::string here = own_folder(); !here.empty()) {
    places.push_back(here + "/" + kModuleName);
    places.push_back(here + "/../lib/" + kModuleName);
  }
  places.push_back(LT_CUDA_MODULE_INSTALLED);
  places.push_back(LT_CUDA_MODULE_BUILT);
  return places;
}

struct Module {
  const Launchers* table = nullptr;
  std::string why;
};

Module load() {
  const std::vector<std::string> places = candidates();
  for (const std::string& path : places) {
    if (access(path.c_str(), F_OK) != 0) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return {nullptr, std::string("cannot load the CUDA module: ") + dlerror()};
    auto entry = reinterpret_cast<LaunchersEntry>(dlsym(handle, kLaunchersEntry));
    const Launchers* table = entry ? entry(kLaunchersVersion, sizeof(Launchers)) : nullptr;
    if (!table)
      return {nullptr, "the CUDA module " + path + " belongs to another version of lt (rebuild or reinstall it)"};
    return {table, ""};
  }
  std::string looked;
  for (const std::string& path : places) looked += (looked.empty() ? "" : ", ") + path;
  return {nullptr, std::string("the CUDA module ") + kModuleName + " is not installed (looked for " + looked + ")"};
}

const Module& module() {
  static const Module loaded = load();
  return loaded;
}

}  // namespace

const std::string& module_unavailable_reason() { return module().why; }

const Launchers& launchers() {
  const Module& m = module();
  if (!m.table) throw Error("cannot use device cuda: " + m.why);
  return *m.table;
}

}  // namespace lt::cuda
#endif
