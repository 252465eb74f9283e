// The tools' PNGs: several same-size images composed into one, a grid for
// lt-sample-image, a row (occluded | completions | original) for lt-complete,
// and PNG files read and written through lt.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lt::app {

struct Image {
  int64_t height = 0, width = 0, channels = 0;  // channels: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA
  std::vector<uint8_t> pixels;                  // height x width x channels, raster order, interleaved
};

// images: count x (height x width x channels) bytes. Gaps are `gap` pixels of
// background grey; every pixel becomes scale x scale.
Image make_sheet(const std::vector<uint8_t>& images, int64_t count, int64_t height, int64_t width,
                 int64_t channels, int64_t columns, int gap = 2, int scale = 1);

// One image out of a batch buffer.
Image image_at(const std::vector<uint8_t>& images, int64_t index, int64_t height, int64_t width, int64_t channels,
               int scale = 1);

// lt_png_read (channels as stored: 2 and 4 with alpha) and lt_png_write;
// each throws lt::api::Failure, one line naming path, when it cannot.
Image read_png(const std::string& path);
void write_png(const std::string& path, const Image& image);

}  // namespace lt::app
