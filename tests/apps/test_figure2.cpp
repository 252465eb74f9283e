// scripts/figure2.sh and scripts/plot_figure2.py on a tiny copy model: the
// four runs log, the plot is a PNG with one curve colour per run, and the
// accuracies it prints are the logs' final test accuracies.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "apps/cli.h"
#include "io/png.h"

using namespace lt;
using namespace lt::test;

namespace {

const char* const kRuns[] = {"softmax", "causal-linear", "lsh-1", "lsh-4"};

// The last eval line's test_accuracy of a JSONL log.
double final_accuracy(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  double accuracy = -1;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["event"] == "eval") accuracy = j["test_accuracy"].get<double>();
  }
  return accuracy;
}

}  // namespace

TEST_CASE("figure2.sh trains the four attentions and plot_figure2.py draws them with their final accuracies") {
  TempDir dir;
  const std::string out = dir.file("fig");
  CommandResult r = run_program(dir, std::string(LT_SCRIPTS_DIR) + "/figure2.sh",
                                "'" + out + "' --steps 3 --layers 1 --d-model 16 --heads 2 -b 4 -t 1 -q",
                                "LT_BIN='" + std::string(LT_BIN_DIR) + "' ");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);

  const Image png = read_png(out + "/figure2.png");
  CHECK(png.width == 800);
  CHECK(png.height == 500);
  REQUIRE(png.channels == 3);
  std::set<std::vector<uint8_t>> colours;
  for (size_t i = 0; i < png.pixels.size(); i += 3) colours.insert({png.pixels[i], png.pixels[i + 1], png.pixels[i + 2]});
  // The script's first four curve colours (matplotlib's tab10).
  for (const std::vector<uint8_t>& c : {std::vector<uint8_t>{31, 119, 180}, {214, 39, 40}, {44, 160, 44}, {255, 127, 14}})
    CHECK(colours.count(c) == 1);

  std::ifstream printed(out + "/accuracies.txt");  // the plot's stdout, also in the script's
  std::string line;
  int n = 0;
  for (const char* run : kRuns) {
    INFO(run);
    REQUIRE(std::getline(printed, line));
    const std::string prefix = std::string(run) + ": final test accuracy ";
    REQUIRE(line.rfind(prefix, 0) == 0);
    const double shown = std::stod(line.substr(prefix.size()));
    const double logged = final_accuracy(out + "/" + run + ".jsonl");
    REQUIRE(logged >= 0);
    CHECK(std::abs(shown - logged) <= 5e-5);
    CHECK(line.find("at step 3;") != std::string::npos);
    ++n;
  }
  CHECK(n == 4);
  CHECK_FALSE(std::getline(printed, line));
}

TEST_CASE("plot_figure2.py refuses a log without training losses with one line") {
  TempDir dir;
  std::ofstream(dir.file("empty.jsonl")) << "{\"event\": \"eval\", \"step\": 1, \"test_accuracy\": 0.5}\n";
  std::ofstream(dir.file("broken.jsonl")) << "{\"event\": \"train\"\n";
  const std::string plot = std::string(LT_SCRIPTS_DIR) + "/plot_figure2.py";
  for (const auto& [file, says] : {std::pair<std::string, std::string>{"empty.jsonl", "no training losses"},
                                   {"broken.jsonl", "broken.jsonl:1: not JSON"},
                                   {"missing.jsonl", "no such file"}}) {
    CommandResult r = run_program(dir, plot, "'" + dir.file(file) + "' -o '" + dir.file("p.png") + "'");
    INFO(file << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}
