// lt-sample-image end to end on tiny checkpoints made here.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "apps/cli.h"
#include "io/png.h"
#include "ops/packed_linear.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("lt-sample-image writes the grid and one PNG per image with their bits/dim on stdout") {
  TempDir dir;
  const std::string model = tiny_image_checkpoint(dir, "m.safetensors", 6, 5, 1);
  CommandResult r = run_tool(dir, "lt-sample-image",
                             "-m '" + model + "' -n 3 -b 2 -s 11 --columns 3 -o '" + dir.file("grid.png") +
                                 "' --out-dir '" + dir.file("out") + "'");
  REQUIRE(r.exit_code == 0);
  INFO(r.err);
  CHECK(r.out.find('\033') == std::string::npos);  // nothing for a terminal on stdout
  CHECK(r.err.find("seed 11") != std::string::npos);
  Image grid = read_png(dir.file("grid.png"));
  CHECK(grid.width == 3 * 5 + 2 * 2);
  CHECK(grid.height == 6);
  CHECK(grid.channels == 1);

  // Each image's reported bits/dim is the parallel model's on the written PNG:
  // the recurrent steps and the teacher-forced pass agree.
  auto m = ImageModel::load(model, Device::cpu);
  std::istringstream lines(r.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    long long index = -1;
    double bpd = -1;
    REQUIRE(std::sscanf(line.c_str(), "sample %lld: %lf bits/dim", &index, &bpd) == 2);
    char name[32];
    std::snprintf(name, sizeof name, "out/sample_%04lld.png", index);
    Image img = read_png(dir.file(name));
    REQUIRE(img.width == 5);
    REQUIRE(img.height == 6);
    std::vector<int32_t> tokens(img.pixels.begin(), img.pixels.end());
    double nats = m->core().forward(m->batch(Tensor::from_vector(tokens, {1, 30})), pass(false, 0));
    CHECK(bpd == doctest::Approx(nats / std::log(2.0)).epsilon(1e-3));
    ++n;
  }
  CHECK(n == 3);
}

TEST_CASE("lt-sample-image gives the same images for the same seed and batch") {
  TempDir dir;
  // lsh (Reformer, lsh-1) has no recurrent form and samples by recomputation.
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax, AttentionKind::lsh}) {
    const std::string model = tiny_image_checkpoint(dir, "m.safetensors", 4, 4, 3, kind);
    auto run = [&](const std::string& out, int seed) {
      REQUIRE(run_tool(dir, "lt-sample-image", "-q -m '" + model + "' -n 4 -b 2 -s " + std::to_string(seed) +
                                                   " -o '" + dir.file(out) + "'")
                  .exit_code == 0);
      return read_bytes(dir.file(out));
    };
    CHECK(run("a.png", 5) == run("b.png", 5));
    CHECK(run("a.png", 5) != run("c.png", 6));
  }
}

TEST_CASE("lt-sample-image --bf16 is deterministic and its bits/dim track the fp32 model") {
  if (!cpu_has_bf16()) {
    std::printf("LT-SKIP: this CPU lacks AVX512_BF16\n");
    return;
  }
  TempDir dir;
  const std::string model = tiny_image_checkpoint(dir, "m.safetensors", 6, 5, 1);
  auto run = [&](const std::string& out) {
    CommandResult r = run_tool(dir, "lt-sample-image", "--bf16 -m '" + model + "' -n 3 -s 4 -o '" + dir.file(out) + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("products bf16, state bf16") != std::string::npos);
    return r.out;
  };
  const std::string out = run("a.png");
  CHECK(run("b.png") == out);
  CHECK(read_bytes(dir.file("a.png")) == read_bytes(dir.file("b.png")));
  Image grid = read_png(dir.file("a.png"));
  auto m = ImageModel::load(model, Device::cpu);
  std::istringstream lines(out);
  std::string line;
  for (int64_t i = 0; i < 3; ++i) {
    REQUIRE(std::getline(lines, line));
    double bpd = -1;
    REQUIRE(std::sscanf(line.c_str(), "sample %*d: %lf bits/dim", &bpd) == 1);
    std::vector<int32_t> tokens;  // image i of the 2 x 2 grid (2-pixel gaps)
    for (int64_t y = 0; y < 6; ++y)
      for (int64_t x = 0; x < 5; ++x)
        tokens.push_back(grid.pixels[((i / 2) * 8 + y) * grid.width + (i % 2) * 7 + x]);
    const double nats = m->core().forward(m->batch(Tensor::from_vector(tokens, {1, 30})), pass(false, 0));
    CHECK(bpd == doctest::Approx(nats / std::log(2.0)).epsilon(2e-2));
  }
}

TEST_CASE("lt-sample-image rejects bad input with one line and writes nothing") {
  TempDir dir;
  const std::string model = tiny_image_checkpoint(dir, "m.safetensors");
  write_bytes(dir.file("corrupt.safetensors"), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const std::string out = dir.file("out.png");
  struct Case {
    std::string args, message;
  } cases[] = {
      {"-m '" + dir.file("missing.safetensors") + "'", "missing.safetensors"},
      {"-m '" + dir.file("corrupt.safetensors") + "'", "corrupt.safetensors"},
      {"-m '" + model + "' -n 0", "count"},
      {"-m '" + model + "' --device gpu0", "gpu0"},
      {"-m '" + model + "' -o '" + dir.file("no/such/dir") + "/x.png'", "x.png"},
      {"-m '" + model + "' -n abc", "--count: expected a whole number >= 1, got 'abc'"},
      {"-m '" + model + "' --no-such-flag", "--no-such-flag"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    CommandResult r = run_tool(dir, "lt-sample-image", c.args + (c.args.find(" -o ") == std::string::npos ? " -o '" + out + "'" : ""));
    CHECK(r.exit_code != 0);
    CHECK(r.err.rfind("lt-sample-image: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.out.empty());
    CHECK(!std::filesystem::exists(out));
  }
}
