// The copy task (paper section 4.1.1) as a task family: the paper's copy
// model under the options, its batches from (seed, step), so that a resumed
// run sees the same data, and its test loss and accuracy.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.h"
#include "core/precision_flags.h"
#include "io/safetensors.h"
#include "task_family.h"
#include "train/copy_task.h"

namespace lt {

namespace {
// The paper's copy model with the options that override it.
CopyTaskConfig copy_config(const TrainingRecipe& a) {
  CopyTaskConfig c;
  apply_transformer_options(a, c.transformer);
  return c;
}

// The test set of the run that wrote the model: it is drawn from the run's
// seed (lt.train.seed, read by load), so --eval and --export score what
// training scored at its end, whatever -b says; a --seed given draws another.
uint64_t test_seed(const TrainingRecipe& a, const std::optional<uint64_t>& trained_with) {
  return a.given.count("--seed") || !trained_with ? a.seed : *trained_with;
}

Evaluation evaluate_copy(SequenceModel& model, uint64_t seed, const Precision& precision = {}) {
  CopyTrainingTask task(copy_task_of(model.config()), seed);
  ReplicaSet replicas(model, CopyTrainingTask::kTestRows);
  ForwardOptions options;
  options.precision = precision;
  return task.evaluate(replicas, options);
}

class CopyFamily final : public TaskFamily {
 public:
  SequenceModel& resume(const std::string& path, const TrainingRecipe& a, Device d) override {
    model_ = load_copy_model(path, d);
    check_resumed_architecture(a, transformer_fields(copy_config(a).transformer, model_->config().transformer), path);
    return *model_;
  }
  SequenceModel& start(const TrainingRecipe& a, Device d) override {
    CopyTaskConfig c = copy_config(a);
    c.validate();
    model_ = std::make_unique<SequenceModel>(c.sequence_config(), d);
    model_->init_parameters(a.seed);
    return *model_;
  }
  int64_t default_batch() const override { return 64; }
  int64_t steps_per_epoch(int64_t) const override { return 100; }  // the reference's epochs of 100 batches
  Schedule schedule(const TrainingRecipe& a, int64_t steps) const override {
    Schedule s = a.make_schedule(1e-3f, steps);
    if (a.schedule == "step" && a.milestones.empty()) s.milestones = {3000};  // the paper's lr / 10
    return s;
  }
  std::map<std::string, std::string> metadata(const TrainingRecipe&) const override { return {}; }
  TrainingTask& task(const TrainingRecipe& a, int64_t) override {
    task_ = std::make_unique<CopyTrainingTask>(copy_task_of(model_->config()), a.seed);
    return *task_;
  }
  std::string description() const override {
    return "copy task L=" + std::to_string(model_->config().max_positions) + ", " +
           std::to_string(model_->config().vocabulary - 1) + " symbols";
  }
  bool reports_bits() const override { return false; }
  FinalScore finish(const TrainingRecipe& a, int64_t step, int64_t, const Precision& eval) override {
    const Evaluation e = evaluate_copy(*model_, a.seed, eval);
    char line[256];
    std::snprintf(line, sizeof line, "step %lld, test loss %.4f, accuracy %.4f", (long long)step, e.loss, e.accuracy);
    return {a.output + ": " + line,
            {{"event", "eval"}, {"step", step}, {"test_loss", e.loss}, {"test_accuracy", e.accuracy}}};
  }

  SequenceModel& load(const std::string& path, Device d) override {
    const Checkpoint ck = load_safetensors(path);
    model_ = load_copy_model(ck, d);
    trained_with_.reset();
    if (ck.metadata.count("lt.train.seed")) trained_with_ = uint64_t(std::stoull(ck.meta("lt.train.seed")));
    return *model_;
  }
  std::map<std::string, std::string> model_metadata() const override { return model_->metadata(); }
  std::string save(const std::string& path, const std::map<std::string, std::string>& meta) override {
    model_->save(path, meta);
    return "";
  }
  std::string evaluate(const TrainingRecipe& a, Device d) override {
    const Evaluation e = evaluate_copy(*model_, test_seed(a, trained_with_), training_precision(a.bf16, a.tf32, d));
    if (a.format == "json")
      return nlohmann::json{{"loss", e.loss}, {"accuracy", e.accuracy}, {"sequences", e.examples}, {"model", a.model}}
                 .dump() +
             "\n";
    char line[160];
    std::snprintf(line, sizeof line, "copy task: loss %.4f, accuracy %.4f on %lld test sequences\n", e.loss,
                  e.accuracy, (long long)e.examples);
    return line;
  }
  void score(const TrainingRecipe& a, std::map<std::string, std::string>& meta, std::string& report) override {
    const Evaluation e = evaluate_copy(*model_, test_seed(a, trained_with_));
    meta["test_accuracy"] = std::to_string(e.accuracy);
    meta["test_loss"] = std::to_string(e.loss);
    char line[160];
    std::snprintf(line, sizeof line, ": test loss %.4f, accuracy %.4f on %lld test sequences\n", e.loss, e.accuracy,
                  (long long)e.examples);
    report += a.output + line;
  }

 private:
  std::unique_ptr<SequenceModel> model_;
  std::unique_ptr<CopyTrainingTask> task_;
  std::optional<uint64_t> trained_with_;  // the loaded checkpoint's lt.train.seed
};

}  // namespace

std::unique_ptr<TaskFamily> copy_family() { return std::make_unique<CopyFamily>(); }

}  // namespace lt
