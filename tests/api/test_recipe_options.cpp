// Every option of lt-train's table (train/recipe_options.h), table-driven: the
// values it must refuse, through lt-train (one line naming the option and
// what it takes, exit 1, nothing written) and through lt_recipe_set
// (LT_ERROR, the same line); the values it must take, through both; and for
// a number, random values against what its documentation says it takes.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "lt.h"
#include "test_util.h"
#include "train/recipe_options.h"

using namespace lt;
using namespace lt::test;

namespace {

// What one option must refuse and must take. For a number, accepts(v) is
// what docs/training.md and --help say it takes, written here apart from
// the table: random values are held to it.
struct OptionCase {
  std::vector<std::string> bad, good;
  std::function<bool(double)> accepts;
};

bool whole(double v) { return v == std::floor(v); }

// The options' cases; "$FILE" stands for a file that exists, "$DIR" for a folder.
std::map<std::string, OptionCase> option_cases() {
  const std::vector<std::string> flag_bad = {"yes", "1", "", "True"}, flag_good = {"true", "false"};
  const std::vector<std::string> path_bad = {""};
  const std::vector<std::string> draw_bad = {"1.5", "-0.1", "0.5:2:1", "0.5:1", "x", "", "0.5:", "nan"};
  const std::vector<std::string> draw_good = {"0", "0.5", "0.5:0.9:1.1", "1", "0.2:5:25"};
  const std::vector<std::string> p_bad = {"1.5", "-0.1", "0.5:1:2", "", "x"}, p_good = {"0", "0.2", "1"};
  auto preset_or_more = [](double v) { return whole(v) && v >= 0; };  // 0: the preset's
  auto positive = [](double v) { return whole(v) && v >= 1; };
  auto count_or_zero = [](double v) { return whole(v) && v >= 0; };
  const std::vector<std::string> size_bad = {"-1", "-4", "1.5", "x", "", " 2", "2 ", "99999999999999999999", "0x10"};
  return {
      {"score", {path_bad, {"a.tsv"}, {}}},
      {"average", {path_bad, {"b.safetensors"}, {}}},
      {"note", {{"=x", "a b=x", "nokey", ""}, {"k=v", "x.y-1_z=", "corpus=four sentences"}, {}}},
      {"recurrent", {flag_bad, flag_good, {}}},
      {"task", {{"poetry", "", "Image", "speech"}, {"image", "copy", "asr"}, {}}},
      {"data", {path_bad, {"data/mnist"}, {}}},
      {"model", {path_bad, {"m.safetensors"}, {}}},
      {"output", {path_bad, {"o.safetensors"}, {}}},
      {"init", {{"", "$DIR", "$DIR/none.safetensors"}, {"$FILE"}, {}}},
      {"resume", {flag_bad, flag_good, {}}},
      {"preset", {{"", "copy", "imagenet", "MNIST"}, {"mnist", "cifar10"}, {}}},
      {"layers", {size_bad, {"0", "1", "12"}, preset_or_more}},
      {"d-model", {size_bad, {"0", "16", "256"}, preset_or_more}},
      {"heads", {size_bad, {"0", "1", "8"}, preset_or_more}},
      {"ff-dim", {size_bad, {"0", "64"}, preset_or_more}},
      {"ff-conv", {{"-1", "32", "3.0", "x"}, {"0", "1", "4", "31"}, [](double v) { return whole(v) && v >= 0 && v <= 31; }}},
      {"mixtures", {size_bad, {"0", "1", "10"}, preset_or_more}},
      {"attention",
       {{"fancy", "lsh-0", "lsh-65", "lsh-", "lsh-04", "causal-", "full", "causal-causal-linear", "", "Softmax"},
        {"causal-linear", "linear", "softmax", "lsh-1", "lsh-4", "lsh-64", "causal-softmax", "causal-lsh-4"},
        {}}},
      {"feature-map", {{"ELU", "tanh", ""}, {"elu", "relu", "favor"}, {}}},
      {"features", {{"-2", "1", "3", "65538", "2.0"}, {"0", "2", "112", "65536"},
                    [](double v) { return whole(v) && (v == 0 || (v >= 2 && v <= 65536 && std::fmod(v, 2) == 0)); }}},
      {"feature-redraw", {{"-1", "2.5"}, {"0", "100"}, count_or_zero}},
      {"output-head", {{"softmax", ""}, {"mol", "categorical"}, {}}},
      {"dropout", {{"1", "-0.5", "-2", "nan", "inf", "1.5", "x"}, {"-1", "0", "0.1", "0.99"},
                   [](double v) { return v == -1 || (v >= 0 && v < 1); }}},
      {"optimizer", {{"sgd", "RAdam", ""}, {"radam", "adam"}, {}}},
      {"lr", {{"-0.001", "-0.5", "nan", "inf", "1e-3x", ""}, {"0", "0.001", "1e-4"}, [](double v) { return v >= 0; }}},
      {"schedule", {{"linear", ""}, {"constant", "step", "cosine"}, {}}},
      {"milestones", {{"0", "-5", "1.5", "x"}, {"1", "3000"}, positive}},
      {"gamma", {{"0", "-0.1", "x"}, {"0.1", "0.5", "2"}, [](double v) { return v > 0; }}},
      {"warmup", {{"-1", "0.5"}, {"0", "100"}, count_or_zero}},
      {"min-lr", {{"-1e-5", "x"}, {"0", "1e-6"}, [](double v) { return v >= 0; }}},
      {"clip", {{"-1", "x"}, {"0", "1", "0.5"}, [](double v) { return v >= 0; }}},
      {"batch", {size_bad, {"0", "1", "64"}, preset_or_more}},
      {"micro-batch", {{"-2", "1.5"}, {"0", "4"}, count_or_zero}},
      {"memory-limit", {{"-1", "nan", "x"}, {"0", "2.5"}, [](double v) { return v >= 0; }}},
      {"steps", {{"-3", "ten", "1.5", ""}, {"0", "1", "100000"}, count_or_zero}},
      {"epochs", {{"0", "-1", "x"}, {"1", "250"}, positive}},
      {"seed", {{"-1", "x", "18446744073709551616", "1.5"}, {"0", "1", "18446744073709551615"}, count_or_zero}},
      {"valid", {path_bad, {"v.tsv"}, {}}},
      {"lexicon", {path_bad, {"cmudict.dict"}, {}}},
      {"encoder", {{"lstm", ""}, {"transformer", "bilstm"}, {}}},
      {"frame-stack", {{"0", "17", "x"}, {"1", "3", "16"}, [](double v) { return whole(v) && v >= 1 && v <= 16; }}},
      {"context", {{"-2", "65", "x"}, {"-1", "0", "64"}, [](double v) { return whole(v) && v >= -1 && v <= 64; }}},
      {"future", {{"-2", "65", "x"}, {"-1", "0", "64"}, [](double v) { return whole(v) && v >= -1 && v <= 64; }}},
      {"max-frames", {{"0", "-1", "x"}, {"1", "2400"}, positive}},
      {"spec-augment", {flag_bad, flag_good, {}}},
      {"vtlp", {{"0.7", "-0.1", "x"}, {"0", "0.1", "0.5"}, [](double v) { return v >= 0 && v <= 0.5; }}},
      {"speed", {draw_bad, draw_good, {}}},
      {"reverb", {draw_bad, draw_good, {}}},
      {"noise", {draw_bad, draw_good, {}}},
      {"telephone", {p_bad, p_good, {}}},
      {"codec", {p_bad, p_good, {}}},
      {"clipping", {draw_bad, draw_good, {}}},
      {"beam", {{"0", "1025", "x"}, {"1", "16", "1024"}, [](double v) { return whole(v) && v >= 1 && v <= 1024; }}},
      {"plateau", {{"-2", "x"}, {"-1", "0", "3"}, [](double v) { return whole(v) && v >= -1; }}},
      {"checkpoint-every", {{"-1", "x"}, {"0", "500"}, count_or_zero}},
      {"eval-every", {{"-1", "x"}, {"0", "1000"}, count_or_zero}},
      {"eval-images", {{"-1", "x"}, {"0", "100"}, count_or_zero}},
      {"log", {path_bad, {"log.jsonl"}, {}}},
      {"format", {{"xml", ""}, {"text", "json"}, {}}},
      {"device", {{"gpu", "CUDA", "cuda:0", "", "gpu0"}, {"cpu", "cuda"}, {}}},
      {"gpu-sum", {{"mpi", ""}, {"nccl", "host"}, {}}},
      {"bf16", {flag_bad, flag_good, {}}},
      {"tf32", {flag_bad, flag_good, {}}},
      {"quiet", {flag_bad, flag_good, {}}},
  };
}

std::string placed(std::string v, const TempDir& dir) {
  for (const auto& [name, path] : {std::pair<std::string, std::string>{"$FILE", dir.file("exists.safetensors")},
                                   {"$DIR", dir.file("folder")}}) {
    const size_t at = v.find(name);
    if (at != std::string::npos) v.replace(at, name.size(), path);
  }
  return v;
}

// lt_recipe_set's answer, and its line on failure.
std::pair<lt_status, std::string> api_set(const std::string& name, const std::string& value) {
  lt_recipe* r = nullptr;
  REQUIRE(lt_recipe_new("copy", &r) == LT_OK);
  const lt_status s = lt_recipe_set(r, name.c_str(), value.c_str());
  const std::string line = s == LT_OK ? "" : lt_last_error();
  lt_recipe_free(r);
  return {s, line};
}

std::string number_text(double v, bool whole_number) {
  if (whole_number) return std::to_string(int64_t(v));
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

TEST_CASE("every lt-train option refuses what it cannot take, through lt-train and lt_recipe_set, in one line") {
  TempDir dir;
  write_text(dir.file("exists.safetensors"), "x");
  std::filesystem::create_directories(dir.file("folder"));
  const std::map<std::string, OptionCase> cases = option_cases();
  std::set<std::string> rows;
  for (const RecipeOption& row : recipe_options()) {
    const std::string name = row.name();
    rows.insert(name);
    INFO("option --", name);
    REQUIRE_MESSAGE(cases.count(name), "a new option of the table needs its case here");
    const OptionCase& c = cases.at(name);
    const bool is_flag = row.takes == RecipeOption::Takes::flag;
    CHECK(c.bad.size() > 0);
    CHECK(c.good.size() > 0);
    // A row of a bool field is a flag, any other says what it takes; every sentinel is in its --help.
    CHECK(is_flag == std::holds_alternative<bool TrainingRecipe::*>(row.field));
    for (const RecipeOption::Sentinel& z : row.sentinels) {
      char text[32];
      std::snprintf(text, sizeof text, "%g: ", z.value);
      const bool documented = row.help.find(std::string("(") + text) != std::string::npos ||
                              row.help.find(std::string("; ") + text) != std::string::npos;
      CHECK_MESSAGE(documented, "--help does not document ", text);
    }
    CHECK((c.accepts == nullptr || row.takes == RecipeOption::Takes::number));

    for (const std::string& pattern : c.bad) {
      const std::string value = placed(pattern, dir);
      INFO("bad value '", value, "'");
      const auto [status, line] = api_set(name, value);
      CHECK(status == LT_ERROR);
      CHECK(line.find('\n') == std::string::npos);
      CHECK(line.rfind("--" + name + ": ", 0) == 0);
      if (row.takes != RecipeOption::Takes::existing_file || value.empty())
        CHECK(line == "--" + name + ": '" + value + "' is not " + row.takes_text());
      else
        CHECK(line.rfind("--" + name + ": " + value + ": ", 0) == 0);  // no such file, or not a file
      if (is_flag) continue;  // on the command line a flag takes no value
      const std::string out = dir.file("trained.safetensors");
      std::string args = "-q -t 1 --" + name + " '" + value + "'";
      for (const auto& [other, text] : {std::pair<std::string, std::string>{"task", "copy"}, {"steps", "1"}, {"output", out}})
        if (other != name) args += " --" + other + " '" + text + "'";
      const CommandResult r = run_tool(dir, "lt-train", args);
      CHECK(r.exit_code == 1);
      CHECK(r.err == "lt-train: " + line + "\n");
      CHECK(r.out.empty());
      CHECK_FALSE(std::filesystem::exists(out));
    }
    for (const std::string& pattern : c.good) {
      const std::string value = placed(pattern, dir);
      INFO("good value '", value, "'");
      const auto [status, line] = api_set(name, value);
      CHECK_MESSAGE(status == LT_OK, line);
      if (row.takes != RecipeOption::Takes::number || !c.accepts) continue;
      // Random numbers: taken exactly when the documentation says so.
      const uint64_t seed = fresh_seed();
      INFO("seed ", seed);
      Rng rng(seed);
      for (int i = 0; i < 20; ++i) {
        const double scale = std::pow(10.0, double(rng.integer(0, 6)));
        double v = rng.uniform(-scale, scale);
        if (row.whole() || rng.integer(0, 1)) v = std::round(v);
        if (rng.integer(0, 3) == 0) v = double(rng.integer(-2, 2));
        if (row.name() == "seed" && v < 0 && rng.integer(0, 1)) v = -v;
        const std::string text = number_text(v, row.whole() && whole(v));
        const double read = std::strtod(text.c_str(), nullptr);
        INFO("random value '", text, "'");
        CHECK((api_set(name, text).first == LT_OK) == c.accepts(read));
      }
    }
  }
  std::set<std::string> listed;
  for (const auto& [name, c] : cases) listed.insert(name);
  CHECK(rows == listed);  // no case for an option that is not one
}

TEST_CASE("lt-train takes every option's good values: a run with all of them fails only at its model") {
  TempDir dir;
  write_text(dir.file("exists.safetensors"), "x");
  const std::map<std::string, OptionCase> cases = option_cases();
  size_t columns = 0;
  for (const auto& [name, c] : cases) columns = std::max(columns, c.good.size());
  for (size_t j = 0; j < columns; ++j) {
    std::string args = "--eval -m '" + dir.file("missing.safetensors") + "' -t 1";
    for (const RecipeOption& row : recipe_options()) {
      const OptionCase& c = cases.at(row.name());
      if (row.name() == "model") continue;
      const std::string value = placed(c.good[j % c.good.size()], dir);
      if (row.takes == RecipeOption::Takes::flag) {
        if (value == "true") args += " --" + row.name();
      } else {
        args += " --" + row.name() + " '" + value + "'";
      }
    }
    INFO(args);
    const CommandResult r = run_tool(dir, "lt-train", args);
    CHECK(r.exit_code == 1);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    for (const RecipeOption& row : recipe_options())  // no option refused
      CHECK_MESSAGE(r.err.rfind("lt-train: --" + row.name() + ": ", 0) != 0, r.err);
  }
}
