// The training run through the library (train/training_run.h), as a program that
// embeds lt drives it: a copy-task run equals lt-train's with the same
// options, tensor for tensor; a resumed run equals the straight one; export
// drops the optimizer state and keeps the recipe.
#include <doctest/doctest.h>

#include "apps/cli.h"
#include "backend/device.h"
#include "train/training_run.h"

using namespace lt;
using namespace lt::test;

namespace {

// The tiny copy model of the CLI tests, on one thread as lt-train's -t 1.
TrainingRecipe tiny_copy_run(const std::string& output, int64_t steps) {
  TrainingRecipe r;
  r.task = "copy";
  r.layers = 1, r.d_model = 16, r.heads = 2, r.batch = 4;
  r.steps = steps;
  r.schedule = "step";
  r.quiet = true;
  r.output = output;
  return r;
}

}  // namespace

TEST_CASE("run_training: a copy-task run through the library equals lt-train's") {
  TempDir dir;
  OneThread one;
  const std::string lib = dir.file("lib.safetensors"), cli = dir.file("cli.safetensors");
  const TrainResult r = run_training(tiny_copy_run(lib, 4));
  CHECK(r.status == TrainStatus::finished);
  CHECK(r.step == 4);
  const CommandResult c = run_tool(dir, "lt-train",
                                   "--task copy --layers 1 --d-model 16 --heads 2 -b 4 --steps 4 -q --schedule step "
                                   "-t 1 -o '" + cli + "'");
  INFO("stderr: " << c.err);
  REQUIRE(c.exit_code == 0);
  CHECK(tensor_values(lib) == tensor_values(cli));
  const Checkpoint a = load_safetensors(lib), b = load_safetensors(cli);
  for (const auto& [key, value] : b.metadata)
    if (key != "lt.train.command" && key != "lt.train.seconds") CHECK_MESSAGE(a.meta(key, "") == value, key);
}

TEST_CASE("run_training: resuming through the library continues bitwise where a straight run ends") {
  TempDir dir;
  OneThread one;
  const std::string resumed = dir.file("resumed.safetensors"), straight = dir.file("straight.safetensors");
  REQUIRE(run_training(tiny_copy_run(resumed, 2)).status == TrainStatus::finished);
  TrainingRecipe again;  // only the output and the new length: the rest comes from the checkpoint
  again.task = "copy";
  again.quiet = true;
  again.resume = true;
  again.output = resumed;
  again.steps = 5;
  again.given = {"--steps"};
  REQUIRE(run_training(again).step == 5);
  REQUIRE(run_training(tiny_copy_run(straight, 5)).status == TrainStatus::finished);
  CHECK(tensor_values(resumed) == tensor_values(straight));

  TrainingRecipe out;
  out.model = straight;
  out.output = dir.file("export.safetensors");
  out.batch = 4;
  out.notes = {"source=library"};
  export_checkpoint(out);
  const Checkpoint ck = load_safetensors(out.output);
  CHECK_FALSE(ck.has("optimizer.exp_avg"));
  CHECK(ck.meta("lt.train.batch") == "4");
  CHECK(ck.meta("note.source") == "library");
  CHECK(ck.metadata.count("test_accuracy") == 1);
}
