// A folder of same-size PNGs as an image dataset. Decoding dominates (60,000
// MNIST-sized files take seconds), so files are decoded in parallel; errors
// are collected per file and the first in name order is reported.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <utility>

#include "common/error.h"
#include "io/image_dataset.h"
#include "io/png.h"

namespace fs = std::filesystem;

namespace lt {
namespace {

std::string dims_str(int64_t w, int64_t h, int64_t c) {
  return std::to_string(w) + "x" + std::to_string(h) + " with " + std::to_string(c) + " channel" +
         (c == 1 ? "" : "s");
}

// Keeps images [begin, end) of a set.
ImageSet slice(const ImageSet& set, int64_t begin, int64_t end, const std::string& source) {
  ImageSet out;
  out.count = end - begin;
  out.height = set.height;
  out.width = set.width;
  out.channels = set.channels;
  out.pixels.assign(set.pixels.begin() + begin * set.image_bytes(),
                    set.pixels.begin() + end * set.image_bytes());
  out.source = source;
  return out;
}

}  // namespace

std::vector<std::string> list_png_files(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::string ext = it->path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char ch) { return char(std::tolower(ch)); });
    if (ext == ".png" && name[0] != '.' && it->is_regular_file()) names.push_back(name);
  }
  if (ec) throw Error(dir + ": cannot list: " + ec.message());
  std::sort(names.begin(), names.end());
  for (std::string& name : names) name = (fs::path(dir) / name).string();
  return names;
}

ImageSet read_png_images(const std::vector<std::string>& paths, const std::string& source) {
  check(!paths.empty(), source + ": no .png files");
  const Image first = read_png(paths[0]);
  ImageSet set;
  set.count = int64_t(paths.size());
  set.height = first.height;
  set.width = first.width;
  set.channels = first.channels;
  set.source = source;
  const size_t bytes = size_t(set.image_bytes());
  set.pixels.resize(bytes * paths.size());
  std::memcpy(set.pixels.data(), first.pixels.data(), bytes);

  std::vector<std::string> errors(paths.size());
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 1; i < set.count; ++i) {
    try {
      const Image img = read_png(paths[i]);
      if (img.width != first.width || img.height != first.height || img.channels != first.channels)
        errors[i] = paths[i] + ": " + dims_str(img.width, img.height, img.channels) + ", but " + paths[0] +
                    " is " + dims_str(first.width, first.height, first.channels) +
                    " (a dataset's PNGs must share size and channels)";
      else
        std::memcpy(set.pixels.data() + i * bytes, img.pixels.data(), bytes);
    } catch (const std::exception& e) {
      errors[i] = e.what();
    }
  }
  for (const std::string& e : errors)
    if (!e.empty()) throw Error(e);
  return set;
}

ImageDataset load_png_folder(const std::string& dir) {
  ImageDataset data;
  data.format = "png";
  const fs::path train_dir = fs::path(dir) / "train", test_dir = fs::path(dir) / "test";
  if (fs::is_directory(train_dir) || fs::is_directory(test_dir)) {
    check(fs::is_directory(train_dir) && fs::is_directory(test_dir),
          dir + ": has " + (fs::is_directory(train_dir) ? "train/ but no test/" : "test/ but no train/") +
              " folder (a split PNG dataset needs both)");
    data.train = read_png_images(list_png_files(train_dir.string()), train_dir.string());
    data.test = read_png_images(list_png_files(test_dir.string()), test_dir.string());
    const ImageSet &a = data.train, &b = data.test;
    check(a.width == b.width && a.height == b.height && a.channels == b.channels,
          b.source + ": images are " + dims_str(b.width, b.height, b.channels) + ", but those in " +
              a.source + " are " + dims_str(a.width, a.height, a.channels));
    return data;
  }

  // Flat folder: sorted by name, the last tenth (at least one image) is the test set.
  const std::vector<std::string> files = list_png_files(dir);
  const int64_t n = int64_t(files.size());
  check(n >= 2,
        dir + ": a flat PNG folder needs at least 2 .png files (train and test), found " + std::to_string(n));
  const int64_t n_test = std::max<int64_t>(1, n / 10);
  ImageSet all = read_png_images(files, dir);
  data.test = slice(all, n - n_test, n,
                    dir + " (last " + std::to_string(n_test) + " of " + std::to_string(n) + " PNGs by name)");
  all.count = n - n_test;
  all.pixels.resize(size_t(all.count * all.image_bytes()));
  all.source = dir + " (first " + std::to_string(all.count) + " of " + std::to_string(n) + " PNGs by name)";
  data.train = std::move(all);
  return data;
}

}  // namespace lt
