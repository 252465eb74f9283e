// lt.h's readers for what a tool is handed: lt_png_read gives the library's
// PNG reader's pixels (the one lt-complete and the image data sets use) and
// refuses what it refuses, as a status and one line; lt_default_lexicon is
// the dictionary the library reads words with when none is named.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "c_api_util.h"
#include "io/png.h"
#include "io/temp_dir.h"
#include "lt.h"
#include "speech/speech_corpus.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("lt_png_read gives a PNG's pixels as stored, channels and all") {
  TempDir dir;
  const uint64_t seed = fresh_seed() % 100000;
  INFO("seed " << seed);
  Rng rng(seed);
  for (int channels : {1, 2, 3, 4}) {
    Image image;
    image.width = 5, image.height = 3, image.channels = channels;
    for (int i = 0; i < 5 * 3 * channels; ++i) image.pixels.push_back(uint8_t(rng.integer(0, 255)));
    const std::string path = dir.file("in" + std::to_string(channels) + ".png");
    write_png(path, image);
    uint8_t* pixels = nullptr;
    int64_t height = 0, width = 0, got_channels = 0;
    REQUIRE(lt_png_read(path.c_str(), &pixels, &height, &width, &got_channels) == LT_OK);
    CHECK(height == 3);
    CHECK(width == 5);
    CHECK(got_channels == channels);
    CHECK(std::vector<uint8_t>(pixels, pixels + image.pixels.size()) == image.pixels);
    lt_bytes_free(pixels);
  }
}

TEST_CASE("lt_png_read refuses what is not a whole PNG, as a status and one line") {
  TempDir dir;
  Image image;
  image.width = 4, image.height = 4, image.channels = 1;
  image.pixels.assign(16, 200);
  const std::string good = dir.file("good.png");
  write_png(good, image);
  std::vector<uint8_t> bytes = read_bytes(good);
  const std::string truncated = dir.file("truncated.png");
  write_bytes(truncated, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 40));
  const std::string text = dir.file("text.png");
  write_bytes(text, {'h', 'e', 'l', 'l', 'o'});
  uint8_t* pixels = reinterpret_cast<uint8_t*>(&image);
  int64_t height = 0, width = 0, channels = 0;
  CHECK(lt_png_read(truncated.c_str(), &pixels, &height, &width, &channels) == LT_ERROR);
  CHECK(pixels == nullptr);
  CHECK(std::string(lt_last_error()).rfind(truncated + ": cannot decode PNG: ", 0) == 0);
  CHECK(lt_png_read(text.c_str(), &pixels, &height, &width, &channels) == LT_ERROR);
  CHECK(std::string(lt_last_error()) == text + ": not a PNG file (no PNG signature)");
  CHECK(lt_png_read(dir.file("missing.png").c_str(), &pixels, &height, &width, &channels) == LT_ERROR);
  CHECK(lt_png_read(nullptr, &pixels, &height, &width, &channels) == LT_ERROR_ARGUMENT);
  CHECK(lt_png_read(good.c_str(), nullptr, &height, &width, &channels) == LT_ERROR_ARGUMENT);
  CHECK(lt_png_read(good.c_str(), &pixels, &height, &width, nullptr) == LT_ERROR_ARGUMENT);
}

TEST_CASE("lt_default_lexicon is the dictionary the library reads words with when none is named") {
  CHECK(std::string(lt_default_lexicon()) == default_lexicon_path());
}
