// load_safetensors, the checkpoint reader of every tool, on arbitrary bytes.
#include "fuzz_util.h"
#include "lt/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = lt::fuzz::scratch_dir() + "/input.safetensors";
  lt::fuzz::write_file(path, data, size);
  lt::fuzz::expect_lt_error_only(path, [&] { lt::load_safetensors(path); });
  return 0;
}
