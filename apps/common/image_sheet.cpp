#include "image_sheet.h"

#include <algorithm>

#include "lt.hpp"

namespace lt::app {

Image make_sheet(const std::vector<uint8_t>& images, int64_t count, int64_t height, int64_t width,
                 int64_t channels, int64_t columns, int gap, int scale) {
  columns = std::max<int64_t>(1, std::min(columns, count));
  const int64_t rows = (count + columns - 1) / columns;
  Image sheet;
  sheet.channels = channels;
  sheet.width = columns * width * scale + (columns - 1) * gap;
  sheet.height = rows * height * scale + (rows - 1) * gap;
  sheet.pixels.assign(size_t(sheet.width * sheet.height * channels), 96);
  const int64_t S = height * width * channels;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t ox = (i % columns) * (width * scale + gap), oy = (i / columns) * (height * scale + gap);
    for (int64_t y = 0; y < height * scale; ++y)
      for (int64_t x = 0; x < width * scale; ++x)
        for (int64_t c = 0; c < channels; ++c)
          sheet.pixels[((oy + y) * sheet.width + ox + x) * channels + c] =
              images[i * S + ((y / scale) * width + x / scale) * channels + c];
  }
  return sheet;
}

Image image_at(const std::vector<uint8_t>& images, int64_t index, int64_t height, int64_t width, int64_t channels,
               int scale) {
  const int64_t S = height * width * channels;
  std::vector<uint8_t> one(images.begin() + index * S, images.begin() + (index + 1) * S);
  return make_sheet(one, 1, height, width, channels, 1, 0, scale);
}

Image read_png(const std::string& path) {
  Image image;
  uint8_t* pixels = nullptr;
  api::ok(lt_png_read(path.c_str(), &pixels, &image.height, &image.width, &image.channels));
  const api::Bytes kept(pixels);
  image.pixels.assign(pixels, pixels + image.height * image.width * image.channels);
  return image;
}

void write_png(const std::string& path, const Image& image) {
  api::write_png(path, image.pixels, image.height, image.width, image.channels);
}

}  // namespace lt::app
