// read_idx_images and read_idx_labels (MNIST's format) on arbitrary plain bytes.
#include "fuzz_util.h"
#include "io/image_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = lt::fuzz::scratch_dir() + "/input-idx-ubyte";
  lt::fuzz::write_file(path, data, size);
  lt::fuzz::expect_lt_error_only(path, [&] { lt::read_idx_images(path); });
  lt::fuzz::expect_lt_error_only(path, [&] { lt::read_idx_labels(path); });
  return 0;
}
