#include <filesystem>

#include "io/image_dataset.h"
#include "io/stored_deflate.h"
#include "io/temp_dir.h"

using namespace lt;
using namespace lt::test;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<uint8_t> idx_file(uint32_t magic, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  put_be32(out, magic);
  for (uint32_t d : dims) put_be32(out, d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Writes <prefix>-images-idx3-ubyte[.gz] (and labels unless count_labels < 0);
// returns the pixels.
std::vector<uint8_t> write_idx_split(Rng& rng, TempDir& tmp, const std::string& prefix, uint32_t n,
                                     uint32_t h, uint32_t w, bool gz, int64_t count_labels) {
  const std::vector<uint8_t> pixels = random_bytes(rng, int64_t(n) * h * w);
  const std::vector<uint8_t> images = idx_file(0x803, {n, h, w}, pixels);
  const std::string suffix = gz ? ".gz" : "";
  write_bytes(tmp.file(prefix + "-images-idx3-ubyte" + suffix), gz ? gzip_stored(images) : images);
  if (count_labels >= 0) {
    const std::vector<uint8_t> labels =
        idx_file(0x801, {uint32_t(count_labels)}, random_bytes(rng, count_labels));
    write_bytes(tmp.file(prefix + "-labels-idx1-ubyte" + suffix), gz ? gzip_stored(labels) : labels);
  }
  return pixels;
}

std::vector<uint8_t> cifar_batch(Rng& rng, int64_t records) {
  std::vector<uint8_t> bytes = random_bytes(rng, records * 3073);
  for (int64_t r = 0; r < records; ++r) bytes[size_t(r * 3073)] = uint8_t(rng.integer(0, 9));
  return bytes;
}

const char* const kCifarFiles[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                   "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

}  // namespace

TEST_CASE("load_image_dataset detects MNIST-style IDX plain with labels or gzip without") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const bool gz = rng.integer(0, 1);
  const bool with_labels = rng.integer(0, 1);
  INFO("gz " << gz << " labels " << with_labels);
  TempDir tmp;
  const uint32_t h = uint32_t(rng.integer(1, 28)), w = uint32_t(rng.integer(1, 28));
  const uint32_t n_train = uint32_t(rng.integer(1, 20)), n_test = uint32_t(rng.integer(1, 10));
  const auto train =
      write_idx_split(rng, tmp, "train", n_train, h, w, gz, with_labels ? int64_t(n_train) : -1);
  const auto test = write_idx_split(rng, tmp, "t10k", n_test, h, w, gz, with_labels ? int64_t(n_test) : -1);

  const ImageDataset data = load_image_dataset(tmp.str());
  CHECK(data.format == "idx");
  CHECK(data.train.count == n_train);
  CHECK(data.test.count == n_test);
  CHECK(data.train.height == h);
  CHECK(data.train.width == w);
  CHECK(data.train.channels == 1);
  CHECK(data.train.pixels == train);
  CHECK(data.test.pixels == test);
  CHECK(data.train.labels.size() == (with_labels ? n_train : 0));
  CHECK(data.test.labels.size() == (with_labels ? n_test : 0));
}

TEST_CASE("load_image_dataset detects CIFAR-10 binary batches here or in cifar-10-batches-bin/") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (const std::string sub : {"", "cifar-10-batches-bin/"}) {
    INFO("folder '" << sub << "'");
    TempDir tmp;
    int64_t n_train = 0, n_test = 0;
    std::vector<int32_t> test_labels;
    for (const char* name : kCifarFiles) {
      const int64_t records = rng.integer(1, 3);
      const std::vector<uint8_t> bytes = cifar_batch(rng, records);
      write_bytes(tmp.file(sub + name), bytes);
      if (std::string(name) == "test_batch.bin") {
        n_test = records;
        for (int64_t r = 0; r < records; ++r) test_labels.push_back(bytes[size_t(r * 3073)]);
      } else {
        n_train += records;
      }
    }
    const ImageDataset data = load_image_dataset(tmp.str());
    CHECK(data.format == "cifar10");
    CHECK(data.train.count == n_train);
    CHECK(data.test.count == n_test);
    CHECK(data.train.channels == 3);
    CHECK(data.test.labels == test_labels);
  }
}

TEST_CASE("load_image_dataset detects PNG folders split or flat") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int w = int(rng.integer(1, 10)), h = int(rng.integer(1, 10)), c = int(rng.integer(1, 4));
  auto png = [&](const std::string& path) {
    write_bytes(path,
                png_stored(w, h, c, std::vector<uint16_t>(size_t(w) * h * c, uint16_t(rng.integer(0, 255)))));
  };
  TempDir split;
  for (int i = 0; i < 3; ++i) png(split.file("train/" + std::to_string(i) + ".png"));
  png(split.file("test/a.png"));
  ImageDataset data = load_image_dataset(split.str());
  CHECK(data.format == "png");
  CHECK(data.train.count == 3);
  CHECK(data.test.count == 1);
  CHECK(data.train.channels == c);

  TempDir flat;
  const int n = int(rng.integer(2, 30));
  for (int i = 0; i < n; ++i) png(flat.file("x" + std::to_string(i) + ".png"));
  data = load_image_dataset(flat.str());
  CHECK(data.format == "png");
  CHECK(data.train.count + data.test.count == n);
  CHECK(data.test.count == std::max(1, n / 10));
}

TEST_CASE("load_image_dataset says what it expected when a folder holds no dataset") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  write_bytes(tmp.file("readme.txt"), random_bytes(rng, 20));
  std::string msg = error_of([&] { load_image_dataset(tmp.str()); });
  for (const char* expected : {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte", "data_batch_1.bin",
                               "test_batch.bin", "*.png", "train/"}) {
    INFO(expected);
    CHECK(contains(msg, expected));
  }
  CHECK(contains(msg, tmp.str()));

  const std::string missing = (tmp.path / "nothing-here").string();
  msg = error_of([&] { load_image_dataset(missing); });
  CHECK(contains(msg, missing));
  CHECK(contains(msg, "not a directory"));
}

TEST_CASE("load_image_dataset names the missing or inconsistent file of a detected format") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const uint32_t h = uint32_t(rng.integer(1, 10)), w = uint32_t(rng.integer(1, 10)),
                 n = uint32_t(rng.integer(1, 10));

  TempDir only_train;
  write_idx_split(rng, only_train, "train", n, h, w, false, n);
  std::string msg = error_of([&] { load_image_dataset(only_train.str()); });
  CHECK(contains(msg, "t10k-images-idx3-ubyte"));

  TempDir bad_labels;
  write_idx_split(rng, bad_labels, "train", n, h, w, true, n);
  write_idx_split(rng, bad_labels, "t10k", n, h, w, true, n + 1);
  msg = error_of([&] { load_image_dataset(bad_labels.str()); });
  CHECK(contains(msg, (bad_labels.path / "t10k-labels-idx1-ubyte.gz").string()));
  CHECK(contains(msg, std::to_string(n + 1) + " labels"));

  TempDir other_size;
  write_idx_split(rng, other_size, "train", n, h, w, false, -1);
  write_idx_split(rng, other_size, "t10k", n, h, w + 1, false, -1);
  msg = error_of([&] { load_image_dataset(other_size.str()); });
  CHECK(contains(msg, (other_size.path / "t10k-images-idx3-ubyte").string()));

  TempDir cifar;
  const int missing = int(rng.integer(0, 5));
  for (int i = 0; i < 6; ++i)
    if (i != missing) write_bytes(cifar.file(kCifarFiles[i]), cifar_batch(rng, 1));
  msg = error_of([&] { load_image_dataset(cifar.str()); });
  CHECK(contains(msg, kCifarFiles[missing]));
  CHECK(contains(msg, cifar.str()));
}
