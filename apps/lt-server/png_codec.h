// Images in and out of requests: PNG bytes from an image's pixels (stb's
// writer, in memory), an uploaded PNG's pixels (lt_png_read, which checks a
// PNG's structure before anything is allocated for it, on a private
// unlinked temporary file), and base64 for PNGs inside JSON.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>


namespace lt::server {

// height x width x channels bytes (1: grey, 3: RGB) as PNG bytes.
std::string encode_png(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels);

struct UploadedImage {
  int64_t height = 0, width = 0, channels = 0;  // channels: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA
  std::vector<uint8_t> pixels;                  // height x width x channels, raster order, interleaved
};

// An uploaded PNG; HttpError(400) with lt's reason when it is not one.
UploadedImage decode_png_upload(std::string_view bytes);

std::string base64_encode(std::string_view bytes);

}  // namespace lt::server
