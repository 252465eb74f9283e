// Image datasets for the paper's image-generation experiments (MNIST, CIFAR-10,
// section 4.2), read into 8-bit pixels. One call finds the format of a folder:
//
//   lt::ImageDataset data = lt::load_image_dataset("data/mnist");
//   // data.train.count x height x width x channels bytes in data.train.pixels
//
// Every reader validates its input and throws lt::Error naming the file and
// the problem. docs/data.md describes the formats and the detection rules.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lt {

struct ImageSet {
  int64_t count = 0, height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // count x height x width x channels: raster order, RGB interleaved
  std::vector<int32_t> labels;  // one per image, or empty when the source has none
  std::string source;           // the file or folder it was read from

  int64_t image_bytes() const { return height * width * channels; }
};

struct ImageDataset {
  ImageSet train, test;
  std::string format;  // "idx", "cifar10" or "png"
};

// Detects the format of dir and reads both splits:
//  - IDX (MNIST, Fashion-MNIST): train-images-idx3-ubyte and t10k-images-idx3-ubyte,
//    each plain or .gz, with train-labels-idx1-ubyte / t10k-labels-idx1-ubyte when present;
//  - CIFAR-10 binary: data_batch_1.bin .. data_batch_5.bin (train) and test_batch.bin,
//    in dir or in dir/cifar-10-batches-bin;
//  - PNG: dir/train/*.png and dir/test/*.png, or else dir/*.png split by name (the
//    last tenth, at least one file, is the test set).
// A folder matching none throws one lt::Error listing the names it looked for.
ImageDataset load_image_dataset(const std::string& dir);

// IDX (LeCun's MNIST format): big-endian magic 0x00000803 and dims count, rows,
// cols, then the bytes. path may be gzip-compressed (read through zlib).
ImageSet read_idx_images(const std::string& path);              // channels 1, labels empty
std::vector<int32_t> read_idx_labels(const std::string& path);  // magic 0x00000801
// Plain (uncompressed) IDX, written atomically. Images must have one channel,
// labels must lie in [0, 255].
void write_idx_images(const std::string& path, const ImageSet& images);
void write_idx_labels(const std::string& path, const std::vector<int32_t>& labels);

// CIFAR-10 binary batches: records of 1 label byte and 3072 pixel bytes, a
// 32x32 plane each of R, G, B; returned pixel-interleaved, files concatenated.
ImageSet read_cifar10_batches(const std::vector<std::string>& paths);

// The *.png files (extension in any case, hidden files skipped) directly in
// dir, sorted by name, as paths.
std::vector<std::string> list_png_files(const std::string& dir);
// Same-size PNGs (same channel count too), in the order given; labels empty.
ImageSet read_png_images(const std::vector<std::string>& paths, const std::string& source);
// The PNG layout of load_image_dataset (train/ and test/, or a flat folder split by name).
ImageDataset load_png_folder(const std::string& dir);

}  // namespace lt
