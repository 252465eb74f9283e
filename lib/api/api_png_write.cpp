// lt.h: PNG files written as the tools write their samples and completions
// (io/png.h: stb_image_write, through a temporary file renamed over the
// path); lt_png_read, its reader, is with the images (api_images.cpp).
#include <limits>
#include <string>

#include "api_internal.h"
#include "io/png.h"

lt_status lt_png_write(const char* path, const uint8_t* pixels, int64_t height, int64_t width, int64_t channels) {
  return lt::api::guarded([&] {
    lt::api::require(path, "path");
    lt::api::require(pixels, "pixels");
    constexpr int64_t kMax = std::numeric_limits<int>::max();  // stb_image_write's sides and row bytes are ints
    if (channels < 1 || channels > 4 || height < 1 || width < 1 || height > kMax || width > kMax / channels)
      throw lt::api::ArgumentError(std::string(path) + ": cannot write a " + std::to_string(width) + "x" +
                                   std::to_string(height) + "x" + std::to_string(channels) +
                                   " PNG (width x height x channels: 1 to 4 channels, a row under 2 GiB)");
    lt::Image image;
    image.height = int(height);
    image.width = int(width);
    image.channels = int(channels);
    image.pixels.assign(pixels, pixels + height * width * channels);
    lt::write_png(path, image);
  });
}
