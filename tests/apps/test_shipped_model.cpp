// How lt-sample-image and lt-complete find the shipped model with no -m:
// LT_WEIGHTS first and only, when set (apps/common/shipped_model.h).
#include <algorithm>
#include <filesystem>

#include "apps/cli.h"
#include "io/png.h"

using namespace lt;
using namespace lt::test;

namespace fs = std::filesystem;

TEST_CASE("with no -m, the tools read mnist.safetensors from the folder LT_WEIGHTS names") {
  TempDir dir;
  // A tiny model under the shipped file's name: its 6x5 images show that this
  // copy was read, not the real one the build can also reach.
  const std::string model = tiny_image_checkpoint(dir, "weights/mnist.safetensors", 6, 5, 1);
  const std::string env = "LT_WEIGHTS='" + dir.file("weights") + "' ";

  CommandResult r = run_tool(dir, "lt-sample-image", "-n 2 -s 3 -o '" + dir.file("grid.png") + "'", env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find(fs::weakly_canonical(model).string()) != std::string::npos);
  Image grid = read_png(dir.file("grid.png"));
  CHECK(grid.width == 2 * 5 + 2);
  CHECK(grid.height == 6);

  Image in;
  in.width = 5;
  in.height = 6;
  in.channels = 1;
  in.pixels.assign(30, 200);
  write_png(dir.file("in.png"), in);
  r = run_tool(dir, "lt-complete", "'" + dir.file("in.png") + "' --keep-rows 3 -s 3 -o '" + dir.file("c.png") + "'", env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Image c = read_png(dir.file("c.png"));
  CHECK(c.width == 5);
  CHECK(c.height == 6);
  CHECK(std::equal(in.pixels.begin(), in.pixels.begin() + 15, c.pixels.begin()));
}

TEST_CASE("with no -m and LT_WEIGHTS naming a folder without the model, the tools fail with one line naming it") {
  TempDir dir;
  const std::string empty = fs::path(dir.file("empty/.keep")).parent_path().string();
  Image in;
  in.width = 28;
  in.height = 28;
  in.channels = 1;
  in.pixels.assign(28 * 28, 0);
  write_png(dir.file("in.png"), in);
  struct Case {
    std::string tool, args;
  } cases[] = {
      {"lt-sample-image", "-n 1 -o '" + dir.file("out.png") + "'"},
      {"lt-complete", "'" + dir.file("in.png") + "' --keep-rows 14 -o '" + dir.file("out.png") + "'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.tool);
    // A set LT_WEIGHTS is the only place looked, even though the build's own
    // weights/ holds the file: a wrong LT_WEIGHTS is an error, not ignored.
    CommandResult r = run_tool(dir, c.tool, c.args, "LT_WEIGHTS='" + empty + "' ");
    CHECK(r.exit_code != 0);
    CHECK(r.err.rfind(c.tool + ": ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find("LT_WEIGHTS=" + empty) != std::string::npos);
    CHECK(r.err.find((fs::path(empty) / "mnist.safetensors").string()) != std::string::npos);
    CHECK(r.out.empty());
    CHECK(!fs::exists(dir.file("out.png")));
  }
}
