// Several same-size images composed into one PNG-ready image: a grid for
// lt-sample-image, a row (occluded | completions | original) for lt-complete.
#pragma once
#include <cstdint>
#include <vector>

#include "io/png.h"

namespace lt::app {

// images: count x (height x width x channels) bytes. Gaps are `gap` pixels of
// background grey; every pixel becomes scale x scale.
Image make_sheet(const std::vector<uint8_t>& images, int64_t count, int64_t height, int64_t width,
                 int64_t channels, int64_t columns, int gap = 2, int scale = 1);

// One image out of a batch buffer.
Image image_at(const std::vector<uint8_t>& images, int64_t index, int64_t height, int64_t width, int64_t channels,
               int scale = 1);

}  // namespace lt::app
