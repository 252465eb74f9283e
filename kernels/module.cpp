// The module's one exported symbol (launchers.h): every other symbol of
// liblt-cuda.so is hidden, so its copies of cudart and of our kernels never
// clash with a program's own.
#include <string_view>

#include "launchers.h"

static_assert(std::string_view(lt::cuda::kLaunchersEntry) == "lt_cuda_launchers");

extern "C" __attribute__((visibility("default"))) const lt::cuda::Launchers* lt_cuda_launchers(int version,
                                                                                                 size_t size) {
  if (version != lt::cuda::kLaunchersVersion || size != sizeof(lt::cuda::Launchers)) return nullptr;
  static const lt::cuda::Launchers table{
#define LT_CUDA_LAUNCHER_ENTRY(name) &lt::kernels::name,
      LT_CUDA_LAUNCHERS(LT_CUDA_LAUNCHER_ENTRY)
#undef LT_CUDA_LAUNCHER_ENTRY
  };
  return &table;
}
