// PNG read/write over Debian's compiled libstb (linked in lib/CMakeLists.txt,
// so no STB_IMAGE_IMPLEMENTATION here). We read the file ourselves so that an
// error can tell "cannot open" from "not a PNG" from stb's decoding reason.
//
// stb allocates what a header declares before it looks at the data (the
// whole output image, and the zlib buffer sized from the dimensions), and
// grows its IDAT buffer to whatever a chunk length claims. So the chunk list
// is walked here first: every chunk must fit in the file, IHDR must be sane,
// and the declared image must be small enough (kMaxImageBytes) and must fit
// in the compressed data actually present (deflate expands at most 1032:1).
// stb only ever sees files whose allocations are bounded by their size.
#include "io/png.h"

#include <stb_image.h>
#include <stb_image_write.h>

#include <cstdio>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "io/file_bytes.h"

namespace lt {
namespace {

// Decoded images above this are refused (a 16384x16384 RGBA file is 1 GiB):
// lt reads dataset images and completion prefixes, far smaller than this.
constexpr uint64_t kMaxImageBytes = uint64_t(256) << 20;
constexpr uint64_t kMaxSide = 1 << 16;
// Deflate's best case is a 258-byte match coded in 2 bits: 1032 bytes out per
// byte in. Stored data needing more than that cannot be in the file.
constexpr uint64_t kMaxDeflateRatio = 1032;

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// A chunk type for messages: its 4 bytes if printable, else hex.
std::string chunk_name(const uint8_t* p) {
  std::string out(reinterpret_cast<const char*>(p), 4);
  for (unsigned char c : out)
    if (c < 0x21 || c > 0x7e) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%08x", be32(p));
      return hex;
    }
  return out;
}

// Throws unless the chunks bound every allocation stb will make (see the top).
void check_png_structure(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string prefix = path + ": cannot decode PNG: ";
  size_t at = 8;
  uint64_t width = 0, height = 0, depth = 0, samples = 0, stored_samples = 0, compressed = 0;
  bool seen_header = false;
  for (;;) {
    if (bytes.size() - at < 8)
      throw Error(prefix + "truncated at byte " + std::to_string(at) + " (no IEND chunk)");
    const uint32_t length = be32(&bytes[at]);
    const std::string type = chunk_name(&bytes[at + 4]);
    // The chunk and its CRC must be in the file (which also keeps lengths
    // under the spec's 2^31 - 1, as read_png refuses files over 2 GiB).
    const size_t left = bytes.size() - at - 8;
    if (left < 4 || length > left - 4)
      throw Error(prefix + "chunk " + type + " at byte " + std::to_string(at) + " declares " +
                  std::to_string(length) + " bytes, the file has " + std::to_string(left < 4 ? 0 : left - 4) +
                  " left: truncated or corrupt");
    const uint8_t* data = &bytes[at + 8];
    if (!seen_header) {
      if (type != "IHDR" || length != 13) throw Error(prefix + "the first chunk is not a 13-byte IHDR");
      width = be32(data);
      height = be32(data + 4);
      depth = data[8];
      // Samples per pixel as stored, and as stb may hold them (a palette index
      // expands to RGBA), by colour type; 0 for the types PNG does not define.
      static const int kStored[7] = {1, 0, 3, 1, 2, 0, 4}, kDecoded[7] = {1, 0, 3, 4, 2, 0, 4};
      stored_samples = data[9] < 7 ? kStored[data[9]] : 0;
      samples = data[9] < 7 ? kDecoded[data[9]] : 0;
      if (samples == 0 || !(depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16))
        throw Error(prefix + "IHDR has colour type " + std::to_string(data[9]) + " and bit depth " +
                    std::to_string(depth) + ", not a valid PNG combination");
      if (width == 0 || height == 0 || width > kMaxSide || height > kMaxSide)
        throw Error(prefix + "declares " + std::to_string(width) + "x" + std::to_string(height) +
                    " pixels (sides must be 1 to " + std::to_string(kMaxSide) + ")");
      const uint64_t image_bytes = width * height * samples * (depth == 16 ? 2 : 1);
      if (image_bytes > kMaxImageBytes)
        throw Error(prefix + "declares " + std::to_string(width) + "x" + std::to_string(height) +
                    " pixels, " + std::to_string(image_bytes >> 20) + " MiB decoded; lt reads at most " +
                    std::to_string(kMaxImageBytes >> 20) + " MiB");
      seen_header = true;
    }
    if (type == "IDAT") compressed += length;
    at += 12 + size_t(length);
    if (type == "IEND") break;
  }
  // The filtered scanlines: a filter byte per row plus the packed samples.
  const uint64_t raw = height * (1 + (width * stored_samples * depth + 7) / 8);
  if (raw > compressed * kMaxDeflateRatio + 1024)
    throw Error(prefix + "declares " + std::to_string(width) + "x" + std::to_string(height) +
                " pixels (" + std::to_string(raw) + " bytes of scanlines), more than its " +
                std::to_string(compressed) + " bytes of compressed image data can hold");
}

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  const auto* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}

}  // namespace

Image read_png(const std::string& path) {
  std::vector<uint8_t> bytes = io::read_file_bytes(path);
  static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() < 8 || std::memcmp(bytes.data(), signature, 8) != 0)
    throw Error(path + ": not a PNG file (no PNG signature)");
  if (bytes.size() > size_t(std::numeric_limits<int>::max())) throw Error(path + ": PNG file over 2 GiB");
  check_png_structure(path, bytes);

  Image img;
  stbi_uc* data =
      stbi_load_from_memory(bytes.data(), int(bytes.size()), &img.width, &img.height, &img.channels, 0);
  if (!data) {
    // stb leaves the reason NULL on some paths (an over-long chunk), and
    // copies an unknown chunk's type into it raw, "IG\r\n PNG chunk not
    // known" (both found by fuzzing): keep the message on one line.
    const char* reason = stbi_failure_reason();
    throw Error(path + ": cannot decode PNG: " + (reason ? reason : "stb_image gave no reason"));
  }
  img.pixels.assign(data, data + size_t(img.width) * img.height * img.channels);
  stbi_image_free(data);
  return img;
}

void write_png(const std::string& path, const Image& image) {
  const std::string dims =
      std::to_string(image.width) + "x" + std::to_string(image.height) + "x" + std::to_string(image.channels);
  check(image.width > 0 && image.height > 0 && image.channels >= 1 && image.channels <= 4,
        path + ": cannot write a " + dims + " PNG (width x height x channels; need 1 to 4 channels)");
  const size_t expected = size_t(image.width) * image.height * image.channels;
  check(image.pixels.size() == expected, path + ": image holds " + std::to_string(image.pixels.size()) +
                                             " bytes, " + dims + " needs " + std::to_string(expected));

  std::vector<uint8_t> encoded;
  if (!stbi_write_png_to_func(append_bytes, &encoded, image.width, image.height, image.channels,
                              image.pixels.data(), image.width * image.channels))
    throw Error(path + ": PNG encoding of a " + dims + " image failed");
  io::write_file_atomically(path, encoded.data(), encoded.size());
}

}  // namespace lt
