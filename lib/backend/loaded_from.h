// Where this lt was loaded from, and the modules it loads from beside itself
// on first use (dlopen), so that a program that never needs them never loads
// their libraries: the CUDA backend (liblt-cuda.so, kernels/launchers.h) and
// MPI (liblt-mpi.so, mpi/mpi_table.h). The shipped weights are found from the
// same folder (io/shipped_files.h).
#pragma once
#include <string>
#include <vector>

namespace lt {

// The folder of the file this code was loaded from: liblt.so.0, or the
// program that links lt statically (a tool); "" if it cannot be told.
std::string own_folder();

struct ModuleSearch {
  std::string file;          // "liblt-cuda.so"
  std::string what;          // "the CUDA module", for messages
  const char* variable;      // "LT_CUDA_MODULE": a path, the only place looked at when set
  std::string installed;     // the install prefix's copy
  std::string built;         // the build folder's copy
  const char* entry;         // the C symbol the module exports
  bool global = false;       // its symbols (and its libraries') visible to later loads: MPI's plugins need it
};

struct LoadedModule {
  void* entry = nullptr;  // the module's entry symbol, or nullptr and
  std::string path;       // the file loaded
  std::string why;        // one line saying why it could not be loaded
};

// Loads the first of $variable, own_folder()/file, own_folder()/../lib/file,
// installed and built that exists. Never throws.
LoadedModule load_module(const ModuleSearch& search);

}  // namespace lt
