// read_idx_images and read_idx_labels on gzip files. Mutating compressed bytes
// rarely reaches the IDX header behind them, so when the first byte is odd
// the harness gzips the rest itself (at a level the byte picks); when it is
// even the rest is written as is, a damaged or hand-made gzip stream.
#include "fuzz_util.h"
#include "io/image_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path = lt::fuzz::scratch_dir() + "/input-idx-ubyte.gz";
  if (data[0] & 1) {
    const std::vector<uint8_t> packed = lt::fuzz::gzip(data + 1, size - 1, (data[0] >> 1) % 10);
    lt::fuzz::write_file(path, packed.data(), packed.size());
  } else {
    lt::fuzz::write_file(path, data + 1, size - 1);
  }
  lt::fuzz::expect_lt_error_only(path, [&] { lt::read_idx_images(path); });
  lt::fuzz::expect_lt_error_only(path, [&] { lt::read_idx_labels(path); });
  return 0;
}
