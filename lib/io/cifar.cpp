// CIFAR-10 binary version: each record is 1 label byte (0..9) then 3072 pixel
// bytes, the 1024 red values of the 32x32 image in raster order, then the
// green plane, then the blue plane. We store pixels interleaved (RGBRGB...),
// the layout of PNGs and of the pixel sequences the image models consume.
#include "common/error.h"
#include "io/file_bytes.h"
#include "io/image_dataset.h"

namespace lt {
namespace {

constexpr int64_t kSide = 32, kChannels = 3, kClasses = 10;
constexpr int64_t kPlane = kSide * kSide;
constexpr int64_t kRecord = 1 + kChannels * kPlane;  // 3073

}  // namespace

ImageSet read_cifar10_batches(const std::vector<std::string>& paths) {
  check(!paths.empty(), "read_cifar10_batches: no batch files given");
  ImageSet set;
  set.height = set.width = kSide;
  set.channels = kChannels;
  for (size_t f = 0; f < paths.size(); ++f) set.source += (f ? ", " : "") + paths[f];

  for (const std::string& path : paths) {
    const std::vector<uint8_t> bytes = io::read_file_bytes(path);
    const int64_t size = int64_t(bytes.size());
    check(size > 0 && size % kRecord == 0,
          path + ": size " + std::to_string(size) + " bytes is not a positive multiple of the " +
              std::to_string(kRecord) + "-byte CIFAR-10 record (1 label + 3x32x32 pixels)");
    const int64_t records = size / kRecord;
    set.pixels.resize(size_t((set.count + records) * kPlane * kChannels));
    set.labels.reserve(size_t(set.count + records));
    for (int64_t r = 0; r < records; ++r) {
      const uint8_t* rec = bytes.data() + r * kRecord;
      check(rec[0] < kClasses, path + ": record " + std::to_string(r) + " has label " +
                                   std::to_string(rec[0]) + ", CIFAR-10 labels are 0..9");
      set.labels.push_back(rec[0]);
      uint8_t* out = set.pixels.data() + (set.count + r) * kPlane * kChannels;
      for (int64_t p = 0; p < kPlane; ++p)
        for (int64_t c = 0; c < kChannels; ++c) out[p * kChannels + c] = rec[1 + c * kPlane + p];
    }
    set.count += records;
  }
  return set;
}

}  // namespace lt
