// scripts/table1.sh on a tiny MNIST-format dataset: the four attentions
// train with the same options, and the table shows each run's steps and the
// bits/dim that lt-train --eval gives its checkpoint.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("table1.sh trains the four attentions alike and tabulates their held-out bits/dim") {
  TempDir dir;
  const std::string data = tiny_idx_dataset(dir, fresh_seed()), out = dir.file("table");
  const std::string options = " --steps 3 --layers 1 --d-model 16 --heads 2 --mixtures 2 -b 4 -t 1 -q";
  CommandResult r = run_program(dir, std::string(LT_SCRIPTS_DIR) + "/table1.sh",
                                "'" + data + "' '" + out + "'" + options, "LT_BIN='" + std::string(LT_BIN_DIR) + "' ");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream saved(out + "/table1.md");
  std::stringstream table;
  table << saved.rdbuf();
  CHECK(table.str() == r.out);

  std::istringstream lines(r.out);
  std::string line;
  REQUIRE(std::getline(lines, line));
  CHECK(line.find("| attention | steps | held-out bits/dim") == 0);
  REQUIRE(std::getline(lines, line));
  for (const char* attention : {"softmax", "lsh-1", "lsh-4", "causal-linear"}) {
    INFO(attention);
    const std::string model = out + "/" + attention + ".safetensors";
    CommandResult eval = run_tool(dir, "lt-train", "--eval -m '" + model + "' --data '" + data + "' -f json -t 1");
    REQUIRE(eval.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(eval.out);
    CHECK(j["attention"] == attention);
    char want[128];
    std::snprintf(want, sizeof want, "| %s | 3 | %.4f | 6 |", attention, j["bits_per_dim"].get<double>());
    REQUIRE(std::getline(lines, line));
    CHECK(line.rfind(want, 0) == 0);
  }
  CHECK_FALSE(std::getline(lines, line));
}
