// lt-complete end to end on tiny checkpoints made here.
#include <algorithm>
#include <filesystem>

#include "apps/cli.h"
#include "io/png.h"

using namespace lt;
using namespace lt::test;

namespace {
Image random_image(Rng& rng, int w, int h, int channels) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels = random_bytes(rng, int64_t(w) * h * channels);
  return img;
}
}  // namespace

TEST_CASE("lt-complete keeps the top rows exactly and writes completions and a sheet") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    const std::string model = tiny_image_checkpoint(dir, "m.safetensors", 6, 5, 3, kind);
    Image in = random_image(rng, 5, 6, 3);
    write_png(dir.file("in.png"), in);
    CommandResult r = run_tool(dir, "lt-complete", "'" + dir.file("in.png") + "' -m '" + model +
                                                       "' --keep-rows 2 -n 3 -s 4 --out-dir '" + dir.file("out") + "'");
    REQUIRE(r.exit_code == 0);
    for (int k = 0; k < 3; ++k) {
      Image c = read_png(dir.file("out/in_completion_" + std::to_string(k) + ".png"));
      REQUIRE(c.width == 5);
      REQUIRE(c.height == 6);
      REQUIRE(c.channels == 3);
      CHECK(std::equal(in.pixels.begin(), in.pixels.begin() + 2 * 5 * 3, c.pixels.begin()));
    }
    Image sheet = read_png(dir.file("out/in_sheet.png"));
    CHECK(sheet.width == 5 * 5 + 4 * 2);  // occluded | 3 completions | original
    CHECK(sheet.height == 6);
  }
}

TEST_CASE("lt-complete takes the unknown pixels from the alpha channel") {
  TempDir dir;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const std::string model = tiny_image_checkpoint(dir, "m.safetensors", 6, 5, 1);
  Image in = random_image(rng, 5, 6, 2);  // grey + alpha
  for (size_t p = 0; p < 30; ++p) in.pixels[p * 2 + 1] = rng.integer(0, 2) ? 255 : 0;
  in.pixels[1] = 255;
  write_png(dir.file("masked.png"), in);
  CommandResult r = run_tool(dir, "lt-complete", "'" + dir.file("masked.png") + "' -m '" + model + "' -o '" +
                                                     dir.file("done.png") + "'");
  REQUIRE(r.exit_code == 0);
  Image c = read_png(dir.file("done.png"));
  REQUIRE(c.channels == 1);
  for (size_t p = 0; p < 30; ++p)
    if (in.pixels[p * 2 + 1] == 255) CHECK(int(c.pixels[p]) == int(in.pixels[p * 2]));
}

TEST_CASE("lt-complete rejects bad input with one line and writes nothing") {
  TempDir dir;
  Rng rng(fresh_seed());
  const std::string model = tiny_image_checkpoint(dir, "m.safetensors", 6, 5, 1);
  write_png(dir.file("ok.png"), random_image(rng, 5, 6, 1));
  write_png(dir.file("big.png"), random_image(rng, 7, 6, 1));
  write_png(dir.file("rgb.png"), random_image(rng, 5, 6, 3));
  write_bytes(dir.file("notpng.png"), {'n', 'o', 't', ' ', 'a', ' ', 'p', 'n', 'g'});
  const std::string out = dir.file("out.png"), m = " -m '" + model + "' ";
  struct Case {
    std::string args, message;
  } cases[] = {
      {"'" + dir.file("big.png") + "'" + m + "--keep-rows 2 -o '" + out + "'", "5x6 grey-scale"},
      {"'" + dir.file("rgb.png") + "'" + m + "--keep-rows 2 -o '" + out + "'", "expects 5x6 grey-scale"},
      {"'" + dir.file("notpng.png") + "'" + m + "--keep-rows 2 -o '" + out + "'", "notpng.png"},
      {"'" + dir.file("ok.png") + "'" + m + "-o '" + out + "'", "alpha"},
      {"'" + dir.file("ok.png") + "'" + m + "--keep-rows 9 -o '" + out + "'", "keeps 45 pixels"},
      {"'" + dir.file("ok.png") + "'" + m + "--keep-rows 2 -n 2 -o '" + out + "'", "--out-dir"},
      {"'" + dir.file("ok.png") + "'" + m + "--keep-rows 1 --keep-pixels 3 -o '" + out + "'", "not both"},
      {"'" + dir.file("ok.png") + "' -m '" + dir.file("nope.safetensors") + "' --keep-rows 2 -o '" + out + "'", "nope.safetensors"},
      {"'" + dir.file("ok.png") + "'" + m + "--keep-rows -2 -o '" + out + "'", "--keep-rows: expected a whole number >= 0, got '-2'"},
      {"'" + dir.file("ok.png") + "'" + m + "--keep-rows 2 --bogus -o '" + out + "'", "--bogus"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    CommandResult r = run_tool(dir, "lt-complete", c.args);
    CHECK(r.exit_code != 0);
    CHECK(r.err.rfind("lt-complete: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(!std::filesystem::exists(out));
  }
}
