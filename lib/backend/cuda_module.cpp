// Finds and loads liblt-cuda.so once. Places, in order: $LT_CUDA_MODULE (a
// path: the only place looked at when set); beside the file that holds this
// code (a tool, or liblt.so) and in its ../lib (an installed tree moved
// elsewhere); the install prefix's library folder; the build folder it was
// built in (tools and tests run from a build tree).
#ifdef LT_WITH_CUDA
#include "backend/cuda_module.h"

#include "backend/loaded_from.h"
#include "common/error.h"

namespace lt::cuda {
namespace {

constexpr const char* kModuleName = "liblt-cuda.so";

struct Module {
  const Launchers* table = nullptr;
  std::string why;
};

Module load() {
  const LoadedModule m = load_module({kModuleName, "the CUDA module", "LT_CUDA_MODULE", LT_CUDA_MODULE_INSTALLED,
                                      LT_CUDA_MODULE_BUILT, kLaunchersEntry});
  if (!m.entry) return {nullptr, m.why};
  auto entry = reinterpret_cast<LaunchersEntry>(m.entry);
  const Launchers* table = entry(kLaunchersVersion, sizeof(Launchers));
  if (!table) return {nullptr, "the CUDA module " + m.path + " belongs to another version of lt (rebuild or reinstall it)"};
  return {table, ""};
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
