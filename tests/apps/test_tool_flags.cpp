// The other tools' flags take no nonsense silently (issue 45's audit of
// lt-sample-image, lt-complete, lt-asr and lt-bench): each value below was
// once taken (an empty path as the default, "nan" through a range, -1 as a
// seed of 2^64 - 1, negative threads as all cores, a device "gpu" as cuda,
// a negative memory bound that skips every case), and each is now refused
// in one line naming the flag or the value, with a non-zero exit and nothing
// on stdout.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "io/png.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("lt-sample-image, lt-complete, lt-asr and lt-bench refuse nonsense flag values in one line") {
  TempDir dir;
  const std::string model = tiny_image_checkpoint(dir, "m.safetensors");
  const std::string png = dir.file("in.png");
  write_png(png, Image{5, 6, 1, std::vector<uint8_t>(30, 9)});
  struct Case {
    std::string tool, args, names;
  };
  const std::string m = "-m '" + model + "' ";
  const std::vector<Case> cases = {
      {"lt-sample-image", m + "-t -3", "--threads"},
      {"lt-sample-image", m + "-s -1", "--seed"},
      {"lt-sample-image", m + "-s 1.5", "--seed"},
      {"lt-sample-image", "-m ''", "--model"},
      {"lt-sample-image", m + "-o ''", "--output"},
      {"lt-sample-image", m + "--out-dir ''", "--out-dir"},
      {"lt-sample-image", m + "--columns -2", "--columns"},
      {"lt-sample-image", m + "-d gpu", "gpu"},
      {"lt-complete", "'" + png + "' " + m + "-o ''", "--output"},
      {"lt-complete", "'" + png + "' " + m + "--out-dir ''", "--out-dir"},
      {"lt-complete", "'" + png + "' " + m + "-s -1", "--seed"},
      {"lt-complete", "'" + png + "' " + m + "-t -1", "--threads"},
      {"lt-complete", "'" + png + "' -m ''", "--model"},
      {"lt-asr", "-m '' a.wav", "--model"},
      {"lt-asr", "--lm '' a.wav", "--lm"},
      {"lt-asr", "--lexicon '' a.wav", "--lexicon"},
      {"lt-asr", "--phone-lm '' a.wav", "--phone-lm"},
      {"lt-asr", "--ref '' a.wav", "--ref"},
      {"lt-asr", "--max-delay nan a.wav", "--max-delay"},
      {"lt-asr", "--pause nan a.wav", "--pause"},
      {"lt-asr", "--follow nan --stream a.wav", "--follow"},
      {"lt-asr", "--prune nan a.wav", "--prune"},
      {"lt-asr", "--lm-weight -1 a.wav", "--lm-weight"},
      {"lt-asr", "--phone-lm-weight inf a.wav", "--phone-lm-weight"},
      {"lt-asr", "--word-bonus nan a.wav", "--word-bonus"},
      {"lt-asr", "--phone-bonus inf a.wav", "--phone-bonus"},
      {"lt-asr", "-t -2 a.wav", "--threads"},
      {"lt-bench", "attention --min-length -5", "--min-length"},
      {"lt-bench", "attention --heads 0", "--heads"},
      {"lt-bench", "attention --head-dim -3", "--head-dim"},
      {"lt-bench", "attention --tokens 0", "--tokens"},
      {"lt-bench", "attention --max-memory -1", "--max-memory"},
      {"lt-bench", "attention --max-memory nan", "--max-memory"},
      {"lt-bench", "attention --min-length 128 --max-length 64", "--min-length 128 is above --max-length 64"},
      {"lt-bench", "attention -f xml", "--format"},
      {"lt-bench", "attention -d gpu", "gpu"},
      {"lt-bench", "generate --max-memory -1", "--max-memory"},
      {"lt-bench", "speech --hours -2", "--hours"},
      {"lt-bench", "speech --hours nan", "--hours"},
      {"lt-bench", "asr -m ''", "--model"},
      {"lt-bench", "asr --seconds nan", "--seconds"},
      {"lt-bench", "streams --seconds nan", "--seconds"},
      {"lt-bench", "streams --prune nan", "--prune"},
      {"lt-bench", "-t -3 attention", "--threads"},
  };
  for (const Case& c : cases) {
    INFO(c.tool, " ", c.args);
    const CommandResult r = run_tool(dir, c.tool, c.args + " -q");
    INFO("stderr: ", r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.exit_code < 128);  // refused, not crashed
    CHECK(r.err.rfind(c.tool + ": ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(c.names) != std::string::npos);
    CHECK(r.out.empty());
  }
}
