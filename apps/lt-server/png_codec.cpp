// PNG encoding with stb_image_write (Debian's libstb, which liblt links
// too), decoding through lt_png_read (png_codec.h).
#include "png_codec.h"

#include <stb_image_write.h>

#include "http_error.h"
#include "lt.h"
#include "private_file.h"

namespace lt::server {

namespace {
void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), size_t(size));
}
}  // namespace

std::string encode_png(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels) {
  std::string out;
  if (!stbi_write_png_to_func(append_bytes, &out, int(width), int(height), int(channels), pixels,
                              int(width * channels)))
    throw HttpError(500, "PNG encoding failed", kCloseInternal);
  return out;
}

UploadedImage decode_png_upload(std::string_view bytes) {
  PrivateFile file(bytes);
  UploadedImage image;
  uint8_t* pixels = nullptr;
  const lt_status status = lt_png_read(file.path().c_str(), &pixels, &image.height, &image.width, &image.channels);
  if (status != LT_OK)
    throw HttpError(status == LT_ERROR ? 400 : 500, file.rename_in_message(lt_last_error(), "the uploaded image"),
                    status == LT_ERROR ? kCloseBadData : kCloseInternal);
  image.pixels.assign(pixels, pixels + image.height * image.width * image.channels);
  lt_bytes_free(pixels);
  return image;
}

std::string base64_encode(std::string_view bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
    out += table[v >> 18];
    out += table[v >> 12 & 63];
    out += table[v >> 6 & 63];
    out += table[v & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += table[v >> 18];
    out += table[v >> 12 & 63];
    out += i + 1 < bytes.size() ? table[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace lt::server
