// lt_png_write, the tools' PNG writer: random images of every channel count
// read back by a decoder written here (zlib's inflate and PNG's five row
// filters), byte for byte; what it cannot write is one line naming the file,
// and leaves no file behind.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io/temp_dir.h"
#include "lt.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

struct Decoded {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

// An 8-bit, non-interlaced PNG (what a writer of 8-bit images makes).
Decoded decode_png(const std::vector<uint8_t>& file) {
  REQUIRE(file.size() > 8);
  REQUIRE(std::vector<uint8_t>(file.begin(), file.begin() + 8) ==
          std::vector<uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'});
  Decoded d;
  std::vector<uint8_t> compressed;
  for (size_t at = 8; at + 12 <= file.size();) {
    const uint32_t length = be32(&file[at]);
    const std::string type(file.begin() + long(at) + 4, file.begin() + long(at) + 8);
    const uint8_t* data = &file[at + 8];
    REQUIRE(at + 12 + length <= file.size());
    CHECK(uint32_t(crc32(crc32(0, &file[at + 4], 4), data, length)) == be32(data + length));
    if (type == "IHDR") {
      d.width = be32(data), d.height = be32(data + 4);
      REQUIRE(data[8] == 8);   // bit depth
      REQUIRE(data[12] == 0);  // not interlaced
      const int colour = data[9];
      d.channels = colour == 0 ? 1 : colour == 4 ? 2 : colour == 2 ? 3 : colour == 6 ? 4 : 0;
      REQUIRE(d.channels > 0);
    }
    if (type == "IDAT") compressed.insert(compressed.end(), data, data + length);
    at += 12 + length;
    if (type == "IEND") break;
  }
  const size_t stride = size_t(d.width * d.channels);
  std::vector<uint8_t> raw(size_t(d.height) * (stride + 1));
  uLongf size = uLongf(raw.size());
  REQUIRE(uncompress(raw.data(), &size, compressed.data(), uLong(compressed.size())) == Z_OK);
  REQUIRE(size == raw.size());
  d.pixels.assign(size_t(d.height) * stride, 0);
  const size_t bpp = size_t(d.channels);
  for (int64_t y = 0; y < d.height; ++y) {
    const uint8_t filter = raw[size_t(y) * (stride + 1)];
    const uint8_t* in = &raw[size_t(y) * (stride + 1) + 1];
    uint8_t* out = &d.pixels[size_t(y) * stride];
    const uint8_t* up = y > 0 ? out - stride : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= bpp ? out[x - bpp] : 0, b = up ? up[x] : 0, c = up && x >= bpp ? up[x - bpp] : 0;
      int predicted = 0;
      if (filter == 1) predicted = a;
      if (filter == 2) predicted = b;
      if (filter == 3) predicted = (a + b) / 2;
      if (filter == 4) {
        const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
        predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      REQUIRE(filter <= 4);
      out[x] = uint8_t(in[x] + predicted);
    }
  }
  return d;
}

}  // namespace

TEST_CASE("lt_png_write writes random images that a decoder written apart reads back byte for byte") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir dir;
  for (int round = 0; round < 12; ++round) {
    const int64_t channels = 1 + round % 4, height = rng.integer(1, 40), width = rng.integer(1, 40);
    std::vector<uint8_t> pixels(size_t(height * width * channels));
    // smooth parts and noise, so that every row filter has its use
    for (size_t i = 0; i < pixels.size(); ++i)
      pixels[i] = rng.integer(0, 3) == 0 ? uint8_t(rng.integer(0, 255)) : uint8_t(i * 3 / size_t(channels));
    const std::string path = dir.file("image" + std::to_string(round) + ".png");
    REQUIRE_MESSAGE(lt_png_write(path.c_str(), pixels.data(), height, width, channels) == LT_OK,
                    std::string(lt_last_error()));
    INFO(height << "x" << width << "x" << channels);
    const Decoded d = decode_png(read_bytes(path));
    CHECK(d.height == height);
    CHECK(d.width == width);
    CHECK(d.channels == channels);
    CHECK(d.pixels == pixels);
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  }
}

TEST_CASE("lt_png_write refuses what it cannot write, in one line naming the file, and leaves nothing") {
  TempDir dir;
  const std::vector<uint8_t> pixels(64, 9);
  const std::string missing = dir.file("none") + "/x.png";  // a folder that does not exist
  CHECK(lt_png_write(missing.c_str(), pixels.data(), 4, 4, 1) == LT_ERROR);
  CHECK(std::string(lt_last_error()).rfind(missing + ": cannot create ", 0) == 0);
  CHECK_FALSE(std::filesystem::exists(missing));
  const std::string path = dir.file("x.png");
  CHECK(lt_png_write(path.c_str(), pixels.data(), 4, 4, 5) == LT_ERROR_ARGUMENT);
  CHECK(std::string(lt_last_error()).rfind(path + ": cannot write a 4x4x5 PNG", 0) == 0);
  CHECK(lt_png_write(path.c_str(), pixels.data(), 0, 4, 1) == LT_ERROR_ARGUMENT);
  CHECK(lt_png_write(path.c_str(), pixels.data(), 4, -1, 1) == LT_ERROR_ARGUMENT);
  CHECK(lt_png_write(path.c_str(), nullptr, 4, 4, 1) == LT_ERROR_ARGUMENT);
  CHECK(lt_png_write(nullptr, pixels.data(), 4, 4, 1) == LT_ERROR_ARGUMENT);
  CHECK_FALSE(std::filesystem::exists(path));
}
