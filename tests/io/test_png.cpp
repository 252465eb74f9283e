#include <filesystem>

#include "io/png.h"
#include "io/stored_deflate.h"
#include "io/temp_dir.h"

using namespace lt;
using namespace lt::test;

namespace {

Image random_image(Rng& rng, int channels) {
  Image img;
  img.width = int(rng.integer(1, 40));
  img.height = int(rng.integer(1, 40));
  img.channels = channels;
  img.pixels = random_bytes(rng, int64_t(img.width) * img.height * channels);
  return img;
}

uint32_t be32_at(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
}

}  // namespace

TEST_CASE("read_png decodes an independently encoded PNG of every channel count") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  for (int c = 1; c <= 4; ++c) {
    INFO("channels " << c);
    const Image want = random_image(rng, c);
    const std::string path = tmp.file("img" + std::to_string(c) + ".png");
    write_bytes(path, png_stored(want.width, want.height, c,
                                 std::vector<uint16_t>(want.pixels.begin(), want.pixels.end())));
    const Image got = read_png(path);
    CHECK(got.width == want.width);
    CHECK(got.height == want.height);
    CHECK(got.channels == c);
    CHECK(got.pixels == want.pixels);
  }
}

TEST_CASE("read_png reduces 16-bit samples to their high byte") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  const int w = int(rng.integer(1, 20)), h = int(rng.integer(1, 20)), c = int(rng.integer(1, 4));
  std::vector<uint16_t> samples(size_t(w) * h * c);
  for (auto& s : samples) s = uint16_t(rng.integer(0, 65535));
  const std::string path = tmp.file("deep.png");
  write_bytes(path, png_stored(w, h, c, samples, 16));
  const Image got = read_png(path);
  REQUIRE(got.pixels.size() == samples.size());
  for (size_t i = 0; i < samples.size(); ++i) CHECK(got.pixels[i] == samples[i] >> 8);
}

TEST_CASE("write_png round-trips and writes the header fields it is given") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  static const uint8_t color_type[5] = {0, 0, 4, 2, 6};
  for (int c = 1; c <= 4; ++c) {
    INFO("channels " << c);
    const Image img = random_image(rng, c);
    const std::string path = tmp.file("out.png");
    write_png(path, img);  // the second pass onwards overwrites
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    const std::vector<uint8_t> bytes = read_bytes(path);
    REQUIRE(bytes.size() > 33);
    CHECK(std::string(bytes.begin() + 12, bytes.begin() + 16) == "IHDR");
    CHECK(be32_at(bytes, 16) == uint32_t(img.width));
    CHECK(be32_at(bytes, 20) == uint32_t(img.height));
    CHECK(bytes[24] == 8);
    CHECK(bytes[25] == color_type[c]);
    CHECK(crc32_of(bytes.data() + 12, 17) == be32_at(bytes, 29));
    const Image back = read_png(path);
    CHECK(back.width == img.width);
    CHECK(back.height == img.height);
    CHECK(back.channels == c);
    CHECK(back.pixels == img.pixels);
  }
}

TEST_CASE("write_png rejects bad images and unwritable paths leaving no file") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  Image img = random_image(rng, 3);
  const std::string path = tmp.file("bad.png");

  img.pixels.pop_back();
  std::string msg = error_of([&] { write_png(path, img); });
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find("bytes") != std::string::npos);

  img = random_image(rng, 3);
  img.channels = 5;
  msg = error_of([&] { write_png(path, img); });
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find("channels") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(path));

  img = random_image(rng, 3);
  const std::string nowhere = (tmp.path / "missing-folder" / "x.png").string();
  msg = error_of([&] { write_png(nowhere, img); });
  CHECK(msg.find(nowhere) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(nowhere));
}

TEST_CASE("read_png errors name the file and the problem") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;

  const std::string missing = tmp.file("missing.png");
  std::string msg = error_of([&] { read_png(missing); });
  CHECK(msg.find(missing) != std::string::npos);
  CHECK(msg.find("cannot open") != std::string::npos);

  const std::string garbage = tmp.file("garbage.png");
  write_bytes(garbage, random_bytes(rng, rng.integer(0, 100)));
  msg = error_of([&] { read_png(garbage); });
  CHECK(msg.find(garbage) != std::string::npos);
  CHECK(msg.find("not a PNG") != std::string::npos);

  // A valid PNG cut short: the signature is there, the image data is not.
  const Image img = random_image(rng, 3);
  std::vector<uint8_t> bytes =
      png_stored(img.width, img.height, 3, std::vector<uint16_t>(img.pixels.begin(), img.pixels.end()));
  bytes.resize(size_t(rng.integer(9, int64_t(bytes.size()) - 13)));
  const std::string cut = tmp.file("cut.png");
  write_bytes(cut, bytes);
  msg = error_of([&] { read_png(cut); });
  CHECK(msg.find(cut) != std::string::npos);
  CHECK(msg.find("cannot decode PNG") != std::string::npos);
}
