// The BLAS kernels in use, for banners and benchmark rows.
#pragma once
#include <string>

extern "C" char* openblas_get_corename(void);

namespace lt {

// "OpenBLAS Cooperlake".
inline std::string blas_description() {
  const char* core = openblas_get_corename();
  return std::string("OpenBLAS ") + (core ? core : "unknown");
}

}  // namespace lt
