// Images in and out of requests: PNG bytes from an image's pixels (stb's
// writer, in memory), an uploaded PNG's pixels (lt's own reader, which
// checks a PNG's structure before stb allocates anything, on a private
// unlinked temporary file), and base64 for PNGs inside JSON.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/png.h"

namespace lt::server {

// height x width x channels bytes (1: grey, 3: RGB) as PNG bytes.
std::string encode_png(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels);

// An uploaded PNG; HttpError(400) with lt's reason when it is not one.
lt::Image decode_png_upload(std::string_view bytes);

std::string base64_encode(std::string_view bytes);

}  // namespace lt::server
