// The CUDA backend, loaded on first use (kernels/launchers.h). Ops call
// `cuda::linear_forward(...)` as if the launchers were linked: each name
// below is a function object that forwards to the loaded module's table.
#pragma once
#include <string>
#include <utility>

#include "launchers.h"

namespace lt::cuda {

// "" once the module is loaded (loading it on the first call); otherwise one
// line naming the module and why it cannot be loaded.
const std::string& module_unavailable_reason();
// The loaded module's table; throws lt::Error with the reason above.
const Launchers& launchers();

template <auto member>
struct Launcher {
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return (launchers().*member)(std::forward<Args>(args)...);
  }
};

#define LT_CUDA_LAUNCHER(name) inline constexpr Launcher<&Launchers::name> name{};
LT_CUDA_LAUNCHERS(LT_CUDA_LAUNCHER)
#undef LT_CUDA_LAUNCHER

}  // namespace lt::cuda
