// load_safetensors, the checkpoint reader of every tool, on arbitrary bytes;
// and parse_safetensors on the same bytes in memory (lt.h's states from
// bytes), which must read exactly what the file reader reads.
#include "fuzz_util.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = lt::fuzz::scratch_dir() + "/input.safetensors";
  lt::fuzz::write_file(path, data, size);
  bool from_file = false, from_memory = false;
  lt::fuzz::expect_lt_error_only(path, [&] {
    lt::load_safetensors(path);
    from_file = true;
  });
  lt::fuzz::expect_lt_error_only(path, [&] {
    lt::parse_safetensors(path, data, size);
    from_memory = true;
  });
  if (from_file != from_memory) __builtin_trap();  // the two readers disagree about these bytes
  return 0;
}
