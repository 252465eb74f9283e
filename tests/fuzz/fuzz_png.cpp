// read_png (lt-complete's prefix image, every PNG of a dataset) on arbitrary bytes.
#include "fuzz_util.h"
#include "io/png.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = lt::fuzz::scratch_dir() + "/input.png";
  lt::fuzz::write_file(path, data, size);
  lt::fuzz::expect_lt_error_only(path, [&] { lt::read_png(path); });
  return 0;
}
