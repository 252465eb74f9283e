// IDX files (the MNIST / Fashion-MNIST format): a big-endian magic whose third
// byte is the element type (0x08, unsigned byte) and fourth the number of
// dims, then one big-endian uint32 per dim, then the elements in row-major
// order. Reading goes through zlib's gzread, which passes plain files through
// unchanged, so "x" and "x.gz" share one path.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "io/file_bytes.h"
#include "io/image_dataset.h"

namespace lt {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dims
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dim

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    if (!f_) throw Error(path + ": cannot open: " + std::strerror(errno));
  }
  ~GzReader() { gzclose(f_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Appends exactly n bytes to out, growing it as data arrives (a corrupt
  // header cannot make us allocate more than the file really holds).
  void read(std::vector<uint8_t>& out, uint64_t n, const std::string& what) {
    const uint64_t start = out.size();
    uint64_t got = 0;
    while (got < n) {
      const unsigned want = unsigned(std::min<uint64_t>(n - got, 1u << 16));
      out.resize(start + got + want);
      const int r = gzread(f_, out.data() + start + got, want);
      if (r < 0) {
        int code;
        throw Error(path_ + ": corrupt while reading its " + what + ": " + gzerror(f_, &code));
      }
      got += uint64_t(r);
      if (r == 0) break;
    }
    out.resize(start + got);
    if (got < n)
      throw Error(path_ + ": truncated: its " + what + " should be " + std::to_string(n) + " bytes, found " +
                  std::to_string(got));
  }
  uint32_t read_be32(const char* what) {
    std::vector<uint8_t> b;
    read(b, 4, what);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
  }
  // Throws when anything follows the elements the header declared.
  void expect_end(uint64_t declared) {
    uint8_t extra;
    const int r = gzread(f_, &extra, 1);
    if (r < 0) {
      int code;
      throw Error(path_ + ": corrupt after its data: " + gzerror(f_, &code));
    }
    if (r > 0)
      throw Error(path_ + ": longer than its header says: data should end after " + std::to_string(declared) +
                  " bytes");
  }

 private:
  std::string path_;
  gzFile f_;
};

void check_magic(const std::string& path, uint32_t magic, uint32_t expected, const char* kind) {
  if (magic == expected) return;
  std::string hint;
  if (magic == kImagesMagic) hint = " (this is an IDX image file)";
  if (magic == kLabelsMagic) hint = " (this is an IDX label file)";
  throw Error(path + ": bad magic " + hex32(magic) + ", expected " + hex32(expected) + " for IDX " + kind +
              hint);
}

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(v >> shift));
}

void check_fits_u32(const std::string& path, int64_t v, const char* what) {
  check(v >= 0 && v <= int64_t(UINT32_MAX),
        path + ": " + what + " " + std::to_string(v) + " does not fit IDX's uint32");
}

}  // namespace

ImageSet read_idx_images(const std::string& path) {
  GzReader in(path);
  check_magic(path, in.read_be32("magic"), kImagesMagic, "images");
  ImageSet set;
  set.count = in.read_be32("image count");
  set.height = in.read_be32("row count");
  set.width = in.read_be32("column count");
  set.channels = 1;
  set.source = path;
  check(set.height > 0 && set.width > 0, path + ": images of " + std::to_string(set.height) + "x" +
                                             std::to_string(set.width) +
                                             " pixels (rows and columns must be positive)");
  // Three uint32 dims can multiply past 2^64 and wrap to a small size (an
  // outside fuzz run: 2^31 x 2^31 x 2^31 wrapped to 0 pixel bytes and was
  // accepted). rows x cols fits in 64 bits; check the count against it.
  const uint64_t image_bytes = uint64_t(set.height) * uint64_t(set.width);
  check(uint64_t(set.count) <= uint64_t(std::numeric_limits<int64_t>::max()) / image_bytes,
        path + ": declares " + std::to_string(set.count) + " images of " + std::to_string(set.height) + "x" +
            std::to_string(set.width) + " pixels, more bytes than can be addressed: corrupt header");
  const uint64_t bytes = uint64_t(set.count) * image_bytes;
  in.read(set.pixels, bytes,
          "pixels (" + std::to_string(set.count) + " x " + std::to_string(set.height) + " x " +
              std::to_string(set.width) + ")");
  in.expect_end(16 + bytes);
  return set;
}

std::vector<int32_t> read_idx_labels(const std::string& path) {
  GzReader in(path);
  check_magic(path, in.read_be32("magic"), kLabelsMagic, "labels");
  const uint32_t count = in.read_be32("label count");
  std::vector<uint8_t> bytes;
  in.read(bytes, count, "labels (" + std::to_string(count) + ")");
  in.expect_end(8 + uint64_t(count));
  return std::vector<int32_t>(bytes.begin(), bytes.end());
}

void write_idx_images(const std::string& path, const ImageSet& images) {
  check(images.channels == 1,
        path + ": IDX holds one channel, the images have " + std::to_string(images.channels));
  check(images.height > 0 && images.width > 0, path + ": cannot write images of " +
                                                   std::to_string(images.height) + "x" +
                                                   std::to_string(images.width));
  check_fits_u32(path, images.count, "image count");
  check_fits_u32(path, images.height, "height");
  check_fits_u32(path, images.width, "width");
  const uint64_t bytes = uint64_t(images.count) * uint64_t(images.height) * uint64_t(images.width);
  check(images.pixels.size() == bytes, path + ": " + std::to_string(images.count) + " images of " +
                                           std::to_string(images.height) + "x" +
                                           std::to_string(images.width) + " need " + std::to_string(bytes) +
                                           " bytes, got " + std::to_string(images.pixels.size()));
  std::vector<uint8_t> out;
  out.reserve(16 + bytes);
  put_be32(out, kImagesMagic);
  put_be32(out, uint32_t(images.count));
  put_be32(out, uint32_t(images.height));
  put_be32(out, uint32_t(images.width));
  out.insert(out.end(), images.pixels.begin(), images.pixels.end());
  io::write_file_atomically(path, out.data(), out.size());
}

void write_idx_labels(const std::string& path, const std::vector<int32_t>& labels) {
  check_fits_u32(path, int64_t(labels.size()), "label count");
  std::vector<uint8_t> out;
  out.reserve(8 + labels.size());
  put_be32(out, kLabelsMagic);
  put_be32(out, uint32_t(labels.size()));
  for (size_t i = 0; i < labels.size(); ++i) {
    check(labels[i] >= 0 && labels[i] <= 255, path + ": label " + std::to_string(labels[i]) + " at index " +
                                                  std::to_string(i) + " is not a byte");
    out.push_back(uint8_t(labels[i]));
  }
  io::write_file_atomically(path, out.data(), out.size());
}

}  // namespace lt
