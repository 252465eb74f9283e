// What lt-train is built from in lt.h: its option table (each row's name,
// flags, type and default as --help prints them), a recipe's values read
// back as set, the caller's name and command line in what a run writes, a
// divergence as its own status, and the world of one a process outside
// mpirun is.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "io/safetensors.h"
#include "lt.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

std::string value_of(const lt_recipe* r, const char* option) {
  char* value = nullptr;
  REQUIRE_MESSAGE(lt_recipe_get(r, option, &value) == LT_OK, std::string(lt_last_error()));
  const std::string text = value;
  lt_string_free(value);
  return text;
}

std::vector<lt_recipe_option> option_table() {
  std::vector<lt_recipe_option> rows(static_cast<size_t>(lt_recipe_option_count()));
  for (size_t i = 0; i < rows.size(); ++i) REQUIRE(lt_recipe_option_at(int64_t(i), &rows[i]) == LT_OK);
  return rows;
}

}  // namespace

TEST_CASE("lt-train's options are lt_recipe_option_at's rows: names, flags, types and defaults as --help shows them") {
  const std::vector<lt_recipe_option> rows = option_table();
  REQUIRE(rows.size() > 40);
  TempDir dir;
  const CommandResult help = run_tool(dir, "lt-train", "--help");
  REQUIRE(help.exit_code == 0);
  lt_recipe* defaults = nullptr;
  REQUIRE(lt_recipe_new("image", &defaults) == LT_OK);
  std::map<std::string, int> seen;
  for (const lt_recipe_option& row : rows) {
    const std::string name = row.name, flags = row.flags;
    INFO(flags);
    CHECK(++seen[name] == 1);
    CHECK(flags.size() >= name.size() + 2);
    CHECK(flags.compare(flags.size() - name.size() - 2, std::string::npos, "--" + name) == 0);
    CHECK(help.out.find(flags) != std::string::npos);
    CHECK((row.flag == 1) == (std::string(row.type).empty()));
    if (*row.help == '\0') continue;  // a flag every tool shares: its text is the tools' own
    CHECK(help.out.find(std::string(row.help).substr(0, 30)) != std::string::npos);
    if (row.flag) continue;
    const std::string shown = row.shows_default ? value_of(defaults, row.name) : "";
    // CLI11's "-b,--batch INT=0", "--preset TEXT", "--note TEXT ..."
    CHECK(help.out.find(flags + " " + row.type + (shown.empty() ? "" : "=" + shown)) != std::string::npos);
  }
  // A few rows written out here, from docs/training.md.
  auto row = [&](const std::string& name) {
    for (const lt_recipe_option& r : rows)
      if (name == r.name) return r;
    FAIL("no option " << name);
    return lt_recipe_option{};
  };
  CHECK(std::string(row("batch").flags) == "-b,--batch");
  CHECK(std::string(row("batch").type) == "INT");
  CHECK(std::string(row("seed").type) == "UINT");
  CHECK(std::string(row("lr").type) == "FLOAT");
  CHECK(std::string(row("task").type) == "TEXT:{image,copy,asr}");
  CHECK(row("milestones").repeatable == 1);
  CHECK(row("note").repeatable == 1);
  CHECK(row("steps").repeatable == 0);
  CHECK(row("resume").flag == 1);
  CHECK(std::string(row("device").help).empty());
  CHECK(std::string(row("spec-augment").group) == "speech");
  CHECK(value_of(defaults, "output") == "model.safetensors");
  CHECK(value_of(defaults, "seed") == "1");
  CHECK(value_of(defaults, "device") == "cpu");
  lt_recipe_option out{};
  CHECK(lt_recipe_option_at(int64_t(rows.size()), &out) == LT_ERROR_ARGUMENT);
  CHECK(lt_recipe_option_at(-1, &out) == LT_ERROR_ARGUMENT);
  CHECK(lt_recipe_option_at(0, nullptr) == LT_ERROR_ARGUMENT);
  lt_recipe_free(defaults);
}

TEST_CASE("lt_recipe_get reads back random values as lt_recipe_set set them, and an unknown option is one line") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  lt_recipe* r = nullptr;
  REQUIRE(lt_recipe_new("copy", &r) == LT_OK);
  CHECK(value_of(r, "task") == "copy");
  for (int round = 0; round < 50; ++round) {
    const std::string steps = std::to_string(rng.integer(1, int64_t(1) << 40));
    const std::string seed_text = std::to_string(uint64_t(rng.integer(0, INT64_MAX)) * 2 + 1);
    char lr[32];
    std::snprintf(lr, sizeof lr, "%.9g", rng.uniform(1e-6, 1));
    const std::string output = "out-" + std::to_string(rng.integer(0, 1000000)) + ".safetensors";
    REQUIRE(lt_recipe_set(r, "steps", steps.c_str()) == LT_OK);
    REQUIRE(lt_recipe_set(r, "seed", seed_text.c_str()) == LT_OK);
    REQUIRE(lt_recipe_set(r, "lr", lr) == LT_OK);
    REQUIRE(lt_recipe_set(r, "output", output.c_str()) == LT_OK);
    const bool flag = rng.integer(0, 1) == 1;
    REQUIRE(lt_recipe_set(r, "spec-augment", flag ? "true" : "false") == LT_OK);
    CHECK(value_of(r, "steps") == steps);
    CHECK(value_of(r, "seed") == seed_text);
    CHECK(std::strtof(value_of(r, "lr").c_str(), nullptr) == std::strtof(lr, nullptr));
    CHECK(value_of(r, "output") == output);
    CHECK(value_of(r, "spec-augment") == (flag ? "true" : "false"));
  }
  char* value = nullptr;
  CHECK(lt_recipe_get(r, "no-such-option", &value) == LT_ERROR);
  CHECK(value == nullptr);
  CHECK(std::string(lt_last_error()).find("no-such-option") != std::string::npos);
  CHECK(lt_recipe_get(nullptr, "steps", &value) == LT_ERROR_ARGUMENT);
  CHECK(lt_recipe_get(r, "steps", nullptr) == LT_ERROR_ARGUMENT);
  CHECK(lt_recipe_set_caller(r, "", nullptr) == LT_ERROR_ARGUMENT);
  CHECK(lt_recipe_set_caller(nullptr, "x", nullptr) == LT_ERROR_ARGUMENT);
  lt_recipe_free(r);
}

TEST_CASE("a run records its caller's command line and names its lines after it, and a divergence is LT_ERROR_DIVERGED") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  TempDir dir;
  const std::string output = dir.file("copy.safetensors");
  const std::string command = "my-trainer --run " + std::to_string(seed);
  lt_recipe* r = nullptr;
  REQUIRE(lt_recipe_new("copy", &r) == LT_OK);
  for (const auto& [option, value] : std::vector<std::pair<const char*, std::string>>{
           {"layers", "1"}, {"d-model", "16"}, {"heads", "2"}, {"batch", "4"}, {"steps", "2"}, {"output", output}})
    REQUIRE(lt_recipe_set(r, option, value.c_str()) == LT_OK);
  REQUIRE(lt_recipe_set_caller(r, "my-trainer", command.c_str()) == LT_OK);
  // Its first line on stderr begins with the caller's name.
  const std::string err = dir.file("err.txt");
  fflush(stderr);
  const int saved = dup(2);
  REQUIRE(freopen(err.c_str(), "w", stderr) != nullptr);
  lt_train_result result{};
  const lt_status status = lt_train(r, nullptr, nullptr, nullptr, &result);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  REQUIRE_MESSAGE(status == LT_OK, std::string(lt_last_error()));
  lt_string_free(result.score);
  CHECK(read_text(err).rfind("my-trainer: copy task", 0) == 0);
  CHECK(load_safetensors(output).meta("lt.train.command") == command);

  // The loss made NaN: its own status, the step in the result, lt-train's line.
  REQUIRE(lt_recipe_set(r, "lr", "1e6") == LT_OK);
  REQUIRE(lt_recipe_set(r, "clip", "0") == LT_OK);
  REQUIRE(lt_recipe_set(r, "steps", "300") == LT_OK);
  REQUIRE(lt_recipe_set(r, "quiet", "true") == LT_OK);
  REQUIRE(lt_recipe_set(r, "output", dir.file("nan.safetensors").c_str()) == LT_OK);
  CHECK(lt_train(r, nullptr, nullptr, nullptr, &result) == LT_ERROR_DIVERGED);
  const std::string line = lt_last_error();
  INFO(line);
  CHECK(line.rfind("loss is ", 0) == 0);  // NaN or Inf
  CHECK(line.find(" at step " + std::to_string(result.step + 1) + "; stopped without updating") != std::string::npos);
  CHECK(result.step >= 1);
  CHECK(result.finished == 0);
  CHECK(result.score == nullptr);
  lt_recipe_free(r);
}

TEST_CASE("outside mpirun a process is a world of one, and lt_world_abort ends it with the status given") {
  lt_world w{-1, -1, -1};
  REQUIRE(lt_world_get(&w) == LT_OK);
  CHECK(w.rank == 0);
  CHECK(w.size == 1);
  CHECK(w.local_rank == 0);
  CHECK(lt_world_get(nullptr) == LT_ERROR_ARGUMENT);
  const int status = int(fresh_seed() % 120) + 1;
  std::fflush(stdout);  // the child's exit flushes what it inherited
  std::fflush(stderr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) lt_world_abort(status);
  int got = 0;
  REQUIRE(waitpid(child, &got, 0) == child);
  CHECK(WIFEXITED(got));
  CHECK(WEXITSTATUS(got) == status);
}
