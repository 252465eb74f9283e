// A full disk, simulated with a file size limit (ulimit -f): writing a
// checkpoint, a PNG or the metrics log fails with one line naming the file
// and a non-zero exit; the previous checkpoint stays as it was and no
// partial file is left behind.
#include <sys/stat.h>

#include "apps/cli.h"

using namespace lt;
using namespace lt::test;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void check_fails_naming(const CommandResult& r, const std::string& path) {
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code < 128);  // an error exit, not death by SIGXFSZ
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(path) != std::string::npos);
  CHECK(r.err.find("File too large") != std::string::npos);
  CHECK_FALSE(exists(path + ".tmp"));
}

const std::string kCopy = "--task copy --layers 1 --d-model 16 --heads 2 -b 4 -q -t 1 ";

}  // namespace

TEST_CASE("a checkpoint write past the file size limit fails in one line and keeps the previous checkpoint") {
  TempDir dir;
  const std::string ckpt = dir.file("copy.safetensors");
  REQUIRE(run_tool(dir, "lt-train", kCopy + "--steps 2 -o '" + ckpt + "'").exit_code == 0);
  const std::vector<uint8_t> before = read_bytes(ckpt);
  REQUIRE(before.size() > 8 * 1024);
  const CommandResult r = run_tool(dir, "lt-train", kCopy + "--steps 4 --resume -o '" + ckpt + "'", "ulimit -f 8; ");
  check_fails_naming(r, ckpt);
  CHECK(read_bytes(ckpt) == before);
}

TEST_CASE("the metrics log and a PNG past the file size limit fail in one line naming them") {
  TempDir dir;
  const std::string log = dir.file("log.jsonl");
  CommandResult r = run_tool(dir, "lt-train", kCopy + "--steps 200 --checkpoint-every 0 --log '" + log + "' -o '" +
                                                  dir.file("c.safetensors") + "'",
                             "ulimit -f 4; ");
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code < 128);
  CHECK(r.err.find(log + ": cannot append to the metrics log: File too large") != std::string::npos);

  const std::string model = tiny_image_checkpoint(dir, "m.safetensors", 6, 5, 1);
  const std::string png = dir.file("grid.png");
  r = run_tool(dir, "lt-sample-image", "-m '" + model + "' -n 64 --scale 16 -q -o '" + png + "'", "ulimit -f 2; ");
  check_fails_naming(r, png);
  CHECK_FALSE(exists(png));
}
