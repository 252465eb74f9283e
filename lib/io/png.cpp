// PNG read/write over Debian's compiled libstb (linked in lib/CMakeLists.txt,
// so no STB_IMAGE_IMPLEMENTATION here). We read the file ourselves so that an
// error can tell "cannot open" from "not a PNG" from stb's decoding reason.
#include "lt/png.h"

#include <stb_image.h>
#include <stb_image_write.h>

#include <cstring>
#include <limits>

#include "io/file_bytes.h"
#include "lt/error.h"

namespace lt {
namespace {

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

  Image img;
  stbi_uc* data =
      stbi_load_from_memory(bytes.data(), int(bytes.size()), &img.width, &img.height, &img.channels, 0);
  if (!data) throw Error(path + ": cannot decode PNG: " + stbi_failure_reason());
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
