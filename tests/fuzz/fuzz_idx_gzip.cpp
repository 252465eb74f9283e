// read_idx_images and read_idx_labels on gzip files. Mutating compressed bytes
// rarely reaches the IDX header behind them, so when the first byte is odd
// the harness gzips the rest itself (at a level the byte picks); when it is
// even the rest is written as is, a damaged or hand-made gzip stream.
#include <zlib.h>

#include "fuzz_util.h"
#include "lt/dataset.h"

namespace {

std::vector<uint8_t> gzip(const uint8_t* data, size_t size, int level) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper, as gzip(1) writes.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<uint8_t> out(deflateBound(&z, uLong(size)) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = uInt(size);
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path = lt::fuzz::scratch_dir() + "/input-idx-ubyte.gz";
  if (data[0] & 1) {
    const std::vector<uint8_t> packed = gzip(data + 1, size - 1, (data[0] >> 1) % 10);
    lt::fuzz::write_file(path, packed.data(), packed.size());
  } else {
    lt::fuzz::write_file(path, data + 1, size - 1);
  }
  lt::fuzz::expect_lt_error_only(path, [&] { lt::read_idx_images(path); });
  lt::fuzz::expect_lt_error_only(path, [&] { lt::read_idx_labels(path); });
  return 0;
}
