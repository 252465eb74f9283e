// lt.h's training: a recipe of lt-train's options trains, stops on its flag
// with a checkpoint, resumes to the bits of lt-train's straight run, and
// evaluates and exports as lt-train --eval and --export print; every lt-train
// option is a recipe option; bad options and values are one line.
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "backend/device.h"
#include "lt.h"
#include "test_util.h"
#include "train/recipe_options.h"

using namespace lt;
using namespace lt::test;

namespace {

struct Recipe {
  lt_recipe* r = nullptr;
  explicit Recipe(const char* task) { REQUIRE(lt_recipe_new(task, &r) == LT_OK); }
  ~Recipe() { lt_recipe_free(r); }
  Recipe& set(const char* option, const std::string& value) {
    REQUIRE_MESSAGE(lt_recipe_set(r, option, value.c_str()) == LT_OK, std::string(lt_last_error()));
    return *this;
  }
};

// lt-train's tiny copy model of the CLI tests.
const char* const kTinyCopy = "--task copy --layers 1 --d-model 16 --heads 2 -b 4 --schedule step -q -t 1 ";
void tiny_copy(Recipe& r, const std::string& output, int64_t steps) {
  r.set("layers", "1").set("d-model", "16").set("heads", "2").set("batch", "4").set("schedule", "step");
  r.set("quiet", "true").set("output", output).set("steps", std::to_string(steps));
}

struct Events {
  std::vector<int64_t> steps;
  int checkpoints = 0;
  int stop_after = -1;
  int stop = 0;
};

void on_event(const lt_train_event* e, void* user) {
  auto* ev = static_cast<Events*>(user);
  if (e->kind == LT_TRAIN_STEP) ev->steps.push_back(e->step);
  if (e->kind == LT_TRAIN_CHECKPOINT) {
    ++ev->checkpoints;
    CHECK(std::string(e->path).size() > 0);
  }
  if (e->kind == LT_TRAIN_STEP && e->step == ev->stop_after) ev->stop = 1;
}

}  // namespace

TEST_CASE("lt.h training: stopped by its flag, resumed, it has lt-train's bits, score, evaluation and export") {
  TempDir dir;
  OneThread one;
  const std::string api = dir.file("api.safetensors"), cli = dir.file("cli.safetensors");
  Events events;
  events.stop_after = 3;
  {
    Recipe r("copy");
    tiny_copy(r, api, 6);
    lt_train_result result;
    REQUIRE_MESSAGE(lt_train(r.r, on_event, &events, &events.stop, &result) == LT_OK, std::string(lt_last_error()));
    CHECK(result.finished == 0);
    CHECK(result.step == 3);
    CHECK(result.score == nullptr);
    CHECK(events.steps == std::vector<int64_t>{1, 2, 3});
    CHECK(events.checkpoints == 1);  // the one the stop wrote
  }
  {
    Recipe r("copy");
    r.set("output", api).set("resume", "true").set("quiet", "true");
    lt_train_result result;
    REQUIRE_MESSAGE(lt_train(r.r, nullptr, nullptr, nullptr, &result) == LT_OK, std::string(lt_last_error()));
    CHECK(result.finished == 1);
    CHECK(result.step == 6);
    REQUIRE(result.score != nullptr);
    const CommandResult c = run_tool(dir, "lt-train", std::string(kTinyCopy) + "--steps 6 -o '" + cli + "'");
    REQUIRE(c.exit_code == 0);
    // The score names the checkpoint: the same line but for its path.
    CHECK(std::regex_replace(std::string(result.score), std::regex(api), "X") + "\n" ==
          std::regex_replace(c.out, std::regex(cli), "X"));
    lt_string_free(result.score);
  }
  CHECK(tensor_values(api) == tensor_values(cli));

  Recipe eval("copy");
  eval.set("model", api).set("format", "json").set("batch", "4");
  char* text = nullptr;
  REQUIRE_MESSAGE(lt_evaluate(eval.r, &text) == LT_OK, std::string(lt_last_error()));
  const CommandResult c = run_tool(dir, "lt-train", "--eval -m '" + api + "' -f json -b 4 -t 1");
  REQUIRE(c.exit_code == 0);
  CHECK(std::string(text) == c.out);
  CHECK(nlohmann::json::parse(text)["accuracy"].get<double>() >= 0);
  lt_string_free(text);

  Recipe out("copy");
  out.set("model", api).set("output", dir.file("export.safetensors")).set("batch", "4").set("note", "source=api");
  char* report = nullptr;
  REQUIRE_MESSAGE(lt_export(out.r, &report) == LT_OK, std::string(lt_last_error()));
  CHECK(std::string(report).find("test loss") != std::string::npos);
  lt_string_free(report);
  const Checkpoint ck = load_safetensors(dir.file("export.safetensors"));
  CHECK_FALSE(ck.has("optimizer.exp_avg"));
  CHECK(ck.meta("note.source") == "api");
}

namespace {
// The loss and accuracy a line prints ("test loss 2.4415, accuracy 0.1003",
// "loss 2.4415, accuracy 0.1003 on 1280 test sequences").
std::pair<std::string, std::string> loss_and_accuracy(const std::string& line) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(line, m, std::regex("loss ([0-9.]+), accuracy ([0-9.]+)")), line);
  return {m[1], m[2]};
}
std::string four_places(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", v);
  return text;
}
}  // namespace

TEST_CASE("A copy model has one test score: lt_train's, lt_evaluate's, lt-train --eval's and the export's, at any batch") {
  TempDir dir;
  OneThread one;
  const uint64_t seed = 2 + fresh_seed() % 100000;  // not lt-train's default seed 1
  const int64_t batch = 2 + int64_t(seed % 7);
  INFO("seed " << seed << ", batch " << batch);
  const std::string model = dir.file("copy.safetensors");
  Recipe r("copy");
  tiny_copy(r, model, 3);
  r.set("seed", std::to_string(seed)).set("batch", std::to_string(batch));
  lt_train_result result;
  REQUIRE_MESSAGE(lt_train(r.r, nullptr, nullptr, nullptr, &result) == LT_OK, std::string(lt_last_error()));
  REQUIRE(result.score != nullptr);
  const auto trained = loss_and_accuracy(result.score);
  lt_string_free(result.score);

  // Evaluated at other batches, without the seed: the checkpoint's.
  Recipe eval("copy");
  eval.set("model", model).set("format", "json").set("batch", std::to_string(batch + 3));
  char* text = nullptr;
  REQUIRE_MESSAGE(lt_evaluate(eval.r, &text) == LT_OK, std::string(lt_last_error()));
  const nlohmann::json j = nlohmann::json::parse(text);
  lt_string_free(text);
  CHECK(std::pair{four_places(j["loss"].get<double>()), four_places(j["accuracy"].get<double>())} == trained);
  CHECK(j["sequences"].get<int64_t>() == 1280);

  const CommandResult cli = run_tool(dir, "lt-train", "--eval -m '" + model + "' -b " + std::to_string(batch * 5) + " -t 1");
  REQUIRE_MESSAGE(cli.exit_code == 0, cli.err);
  CHECK(loss_and_accuracy(cli.out) == trained);
  CHECK(cli.out.find("on 1280 test sequences") != std::string::npos);

  Recipe out("copy");
  out.set("model", model).set("output", dir.file("export.safetensors")).set("batch", "1");
  char* report = nullptr;
  REQUIRE_MESSAGE(lt_export(out.r, &report) == LT_OK, std::string(lt_last_error()));
  CHECK(loss_and_accuracy(report) == trained);
  lt_string_free(report);
  const Checkpoint ck = load_safetensors(dir.file("export.safetensors"));
  CHECK(four_places(std::stod(ck.meta("test_loss"))) == trained.first);

  // Another seed draws another test set, so the seed above is the one read.
  const CommandResult other =
      run_tool(dir, "lt-train", "--eval -f json -m '" + model + "' -s " + std::to_string(seed + 1) + " -t 1");
  REQUIRE_MESSAGE(other.exit_code == 0, other.err);
  CHECK(nlohmann::json::parse(other.out)["loss"].get<double>() != j["loss"].get<double>());
}

TEST_CASE("lt.h training: lt-train's flags are the option table's rows, and lt_recipe_set checks them alike") {
  TempDir dir;
  const CommandResult help = run_tool(dir, "lt-train", "--help");
  REQUIRE(help.exit_code == 0);
  std::istringstream in(help.out);
  std::set<std::string> flags, rows;
  for (std::string line; std::getline(in, line);) {
    // An option's line: "  -o,--output TEXT=..." or "  --steps INT=0 ...".
    std::smatch m;
    if (!std::regex_search(line, m, std::regex("^ +(?:-[a-z],)?--([a-z0-9-]+)"))) continue;
    const std::string name = m[1];
    if (name == "help" || name == "eval" || name == "export" || name == "threads") continue;  // modes and the process's
    flags.insert(name);
    Recipe r("image");
    if (lt_recipe_set(r.r, name.c_str(), "1") != LT_OK) {
      INFO(name);
      CHECK(std::string(lt_last_error()).find("is not an option") == std::string::npos);
    }
  }
  for (const RecipeOption& o : recipe_options()) CHECK_MESSAGE(rows.insert(o.name()).second, o.name());  // once each
  CHECK(flags == rows);
  CHECK(rows.size() > 50);

  Recipe r("image");
  CHECK(lt_recipe_set(r.r, "bogus", "1") == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "'bogus' is not an option of lt-train (its long flags, without the dashes)");
  CHECK(lt_recipe_set(r.r, "steps", "ten") == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "--steps: 'ten' is not a whole number >= 1, or 0 (from --epochs)");
  CHECK(lt_recipe_set(r.r, "beam", "0") == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "--beam: '0' is not a whole number in 1..1024");
  CHECK(lt_recipe_set(r.r, "spec-augment", "yes") == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "--spec-augment: 'yes' is not true or false");
  CHECK(lt_recipe_set(r.r, "micro-batch", "-2") == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "--micro-batch: '-2' is not a whole number >= 1, or 0 (all at once)");
  CHECK(lt_recipe_set(r.r, "vtlp", "0.7") == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "--vtlp: '0.7' is not a number in 0..0.5");
  CHECK(lt_recipe_set(r.r, "format", "xml") == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "--format: 'xml' is not one of text, json");
  CHECK(lt_recipe_set(r.r, "init", dir.file("none.safetensors").c_str()) == LT_ERROR);
  CHECK(std::string(lt_last_error()).find("none.safetensors: no such file") != std::string::npos);
  lt_recipe* none = nullptr;
  CHECK(lt_recipe_new("poetry", &none) == LT_ERROR);
  CHECK(none == nullptr);
  CHECK(std::string(lt_last_error()) == "--task: 'poetry' is not one of image, copy, asr");
  // An option of another mode: refused before any work.
  Recipe copy("copy");
  tiny_copy(copy, dir.file("x.safetensors"), 2);
  copy.set("score", "a.tsv");
  lt_train_result result;
  CHECK(lt_train(copy.r, nullptr, nullptr, nullptr, &result) == LT_ERROR);
  CHECK(std::string(lt_last_error()) == "--score, --note and --average are options of --export");
  CHECK(result.score == nullptr);
}
