// Finds which image format a folder holds, in a fixed order: IDX, CIFAR-10
// binary, PNG. The first whose file names are present is read, and then all
// of its files must be there and valid.
#include <filesystem>

#include "common/error.h"
#include "io/image_dataset.h"

namespace fs = std::filesystem;

namespace lt {
namespace {

// dir/name, else dir/name.gz, else "".
std::string find_idx(const fs::path& dir, const std::string& name) {
  for (const std::string& candidate : {name, name + ".gz"})
    if (fs::is_regular_file(dir / candidate)) return (dir / candidate).string();
  return "";
}

ImageSet read_idx_split(const fs::path& dir, const std::string& prefix) {
  const std::string images = find_idx(dir, prefix + "-images-idx3-ubyte");
  check(!images.empty(), dir.string() + ": has IDX files but no " + prefix + "-images-idx3-ubyte[.gz]");
  ImageSet set = read_idx_images(images);
  const std::string labels = find_idx(dir, prefix + "-labels-idx1-ubyte");
  if (!labels.empty()) {
    set.labels = read_idx_labels(labels);
    check(int64_t(set.labels.size()) == set.count, labels + ": " + std::to_string(set.labels.size()) +
                                                       " labels for the " + std::to_string(set.count) +
                                                       " images of " + images);
  }
  return set;
}

const char* const kCifarFiles[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                   "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

bool has_any_cifar_file(const fs::path& dir) {
  for (const char* name : kCifarFiles)
    if (fs::exists(dir / name)) return true;
  return false;
}

ImageDataset read_cifar10_folder(const fs::path& dir) {
  std::vector<std::string> paths;
  for (const char* name : kCifarFiles) {
    const fs::path p = dir / name;
    check(fs::is_regular_file(p), dir.string() + ": has CIFAR-10 batches but no " + name +
                                      " (expected data_batch_1.bin .. data_batch_5.bin and test_batch.bin)");
    paths.push_back(p.string());
  }
  ImageDataset data;
  data.format = "cifar10";
  data.test = read_cifar10_batches({paths.back()});
  paths.pop_back();
  data.train = read_cifar10_batches(paths);
  return data;
}

}  // namespace

ImageDataset load_image_dataset(const std::string& dir) {
  check(fs::is_directory(dir), dir + ": not a directory (expected a folder holding an image dataset)");
  const fs::path root(dir);

  if (!find_idx(root, "train-images-idx3-ubyte").empty() ||
      !find_idx(root, "t10k-images-idx3-ubyte").empty()) {
    ImageDataset data;
    data.format = "idx";
    data.train = read_idx_split(root, "train");
    data.test = read_idx_split(root, "t10k");
    check(data.train.height == data.test.height && data.train.width == data.test.width,
          data.test.source + ": images are " + std::to_string(data.test.height) + "x" +
              std::to_string(data.test.width) + ", those of " + data.train.source + " " +
              std::to_string(data.train.height) + "x" + std::to_string(data.train.width));
    return data;
  }

  for (const fs::path& cifar : {root, root / "cifar-10-batches-bin"})
    if (has_any_cifar_file(cifar)) return read_cifar10_folder(cifar);

  if (fs::is_directory(root / "train") || fs::is_directory(root / "test") || !list_png_files(dir).empty())
    return load_png_folder(dir);

  throw Error(
      dir +
      ": no image dataset found; expected one of: IDX files train-images-idx3-ubyte[.gz] and "
      "t10k-images-idx3-ubyte[.gz] (labels train-labels-idx1-ubyte[.gz], t10k-labels-idx1-ubyte[.gz] "
      "optional); CIFAR-10 binary data_batch_1.bin .. data_batch_5.bin and test_batch.bin (here or in "
      "cifar-10-batches-bin/); PNG images in train/ and test/, or *.png files");
}

}  // namespace lt
