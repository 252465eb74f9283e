// PNG files through stb_image / stb_image_write (Debian's libstb): 8 bits per
// channel, channels kept as stored. 16-bit PNGs are reduced to 8 bits.
#pragma once
#include <string>
#include <vector>

namespace lt {

struct Image {
  int width = 0, height = 0;
  int channels = 0;             // 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA
  std::vector<uint8_t> pixels;  // height x width x channels, raster order, interleaved
};

// Throws lt::Error naming the file and stb's reason when it cannot be decoded.
Image read_png(const std::string& path);
// Writes through a temporary file renamed over path: readers never see a
// partial image, and a failed write leaves path untouched.
void write_png(const std::string& path, const Image& image);

}  // namespace lt
