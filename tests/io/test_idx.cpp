#include <filesystem>

#include "io/image_dataset.h"
#include "io/stored_deflate.h"
#include "io/temp_dir.h"

using namespace lt;
using namespace lt::test;

namespace {

// The IDX layout written out by hand: magic, big-endian dims, bytes.
std::vector<uint8_t> idx_file(uint32_t magic, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  put_be32(out, magic);
  for (uint32_t d : dims) put_be32(out, d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

ImageSet random_images(Rng& rng) {
  ImageSet set;
  set.count = rng.integer(0, 12);
  set.height = rng.integer(1, 30);
  set.width = rng.integer(1, 30);
  set.channels = 1;
  set.pixels = random_bytes(rng, set.count * set.height * set.width);
  return set;
}

std::vector<int32_t> random_labels(Rng& rng, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = int32_t(rng.integer(0, 255));
  return v;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("write_idx_images and write_idx_labels write the IDX layout and read back") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const ImageSet set = random_images(rng);
  const std::vector<int32_t> labels = random_labels(rng, set.count);
  const std::string images_path = tmp.file("images-idx3-ubyte"), labels_path = tmp.file("labels-idx1-ubyte");
  write_idx_images(images_path, set);
  write_idx_labels(labels_path, labels);
  CHECK_FALSE(std::filesystem::exists(images_path + ".tmp"));

  CHECK(read_bytes(images_path) ==
        idx_file(0x803, {uint32_t(set.count), uint32_t(set.height), uint32_t(set.width)}, set.pixels));
  CHECK(read_bytes(labels_path) ==
        idx_file(0x801, {uint32_t(labels.size())}, std::vector<uint8_t>(labels.begin(), labels.end())));

  const ImageSet back = read_idx_images(images_path);
  CHECK(back.count == set.count);
  CHECK(back.height == set.height);
  CHECK(back.width == set.width);
  CHECK(back.channels == 1);
  CHECK(back.pixels == set.pixels);
  CHECK(back.labels.empty());
  CHECK(back.source == images_path);
  CHECK(read_idx_labels(labels_path) == labels);
}

TEST_CASE("read_idx_images and read_idx_labels read gzip-compressed files") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  // Large enough for several stored deflate blocks and several reads.
  const uint32_t n = uint32_t(rng.integer(1, 300)), h = uint32_t(rng.integer(1, 40)),
                 w = uint32_t(rng.integer(1, 40));
  const std::vector<uint8_t> pixels = random_bytes(rng, int64_t(n) * h * w), labels = random_bytes(rng, n);
  const std::string images_path = tmp.file("train-images-idx3-ubyte.gz");
  const std::string labels_path = tmp.file("train-labels-idx1-ubyte.gz");
  write_bytes(images_path, gzip_stored(idx_file(0x803, {n, h, w}, pixels)));
  write_bytes(labels_path, gzip_stored(idx_file(0x801, {n}, labels)));

  const ImageSet set = read_idx_images(images_path);
  CHECK(set.count == n);
  CHECK(set.height == h);
  CHECK(set.width == w);
  CHECK(set.pixels == pixels);
  CHECK(read_idx_labels(labels_path) == std::vector<int32_t>(labels.begin(), labels.end()));
}

TEST_CASE("malformed IDX files give errors naming the file and the problem") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const uint32_t n = uint32_t(rng.integer(1, 10)), h = uint32_t(rng.integer(1, 10)),
                 w = uint32_t(rng.integer(1, 10));
  const std::vector<uint8_t> pixels = random_bytes(rng, int64_t(n) * h * w);
  const std::vector<uint8_t> good = idx_file(0x803, {n, h, w}, pixels);
  const std::string path = tmp.file("images");

  auto expect = [&](const std::vector<uint8_t>& bytes, const std::string& problem) {
    INFO("expected problem " << problem);
    write_bytes(path, bytes);
    const std::string msg = error_of([&] { read_idx_images(path); });
    CHECK(contains(msg, path));
    CHECK(contains(msg, problem));
  };
  expect(idx_file(0x801, {n, h, w}, pixels), "bad magic 0x00000801");
  expect(idx_file(0x804, {n, h, w}, pixels), "bad magic");
  expect(idx_file(0x803, {n, h, 0}, {}), "0 pixels");
  std::vector<uint8_t> cut = good;
  cut.resize(size_t(rng.integer(0, int64_t(good.size()) - 1)));
  expect(cut, "truncated");
  std::vector<uint8_t> longer = good;
  longer.push_back(uint8_t(rng.integer(0, 255)));
  expect(longer, "longer than its header");
  // A header claiming more images than the file holds is truncation too.
  expect(idx_file(0x803, {n + 1, h, w}, pixels), "truncated");
  // gzip cut short: zlib sees the stream end early.
  std::vector<uint8_t> gz = gzip_stored(good);
  gz.resize(gz.size() - size_t(rng.integer(9, 12)));
  expect(gz, "");

  const std::string missing = tmp.file("missing");
  std::string msg = error_of([&] { read_idx_images(missing); });
  CHECK(contains(msg, missing));
  CHECK(contains(msg, "cannot open"));

  write_bytes(path, good);
  msg = error_of([&] { read_idx_labels(path); });
  CHECK(contains(msg, path));
  CHECK(contains(msg, "bad magic 0x00000803, expected 0x00000801"));
  write_bytes(path, idx_file(0x801, {n + 1}, random_bytes(rng, n)));
  msg = error_of([&] { read_idx_labels(path); });
  CHECK(contains(msg, path));
  CHECK(contains(msg, "truncated"));
}

TEST_CASE("write_idx_images and write_idx_labels reject what IDX cannot hold") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const std::string path = tmp.file("out");
  ImageSet set = random_images(rng);
  set.channels = 3;
  set.pixels.resize(size_t(set.count * set.height * set.width * 3));
  std::string msg = error_of([&] { write_idx_images(path, set); });
  CHECK(contains(msg, path));
  CHECK(contains(msg, "one channel"));

  set = random_images(rng);
  set.pixels.push_back(0);
  msg = error_of([&] { write_idx_images(path, set); });
  CHECK(contains(msg, path));
  CHECK(contains(msg, "bytes"));

  std::vector<int32_t> labels = random_labels(rng, rng.integer(1, 10));
  labels[size_t(rng.integer(0, int64_t(labels.size()) - 1))] = rng.integer(0, 1) ? 256 : -1;
  msg = error_of([&] { write_idx_labels(path, labels); });
  CHECK(contains(msg, path));
  CHECK(contains(msg, "not a byte"));
  CHECK_FALSE(std::filesystem::exists(path));
}
