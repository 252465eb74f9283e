// lt-train's copy task (paper section 4.1.1): train, evaluate and export
// through the shared model, loop and reports. Batches come from (seed,
// step), so a resumed run sees the same data.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "lt/backend.h"
#include "lt/copy_task.h"
#include "lt/error.h"
#include "precision_options.h"
#include "train_run.h"
#include "train_tasks.h"

namespace lt::app {

namespace {
// The paper's copy model with the flags that override it.
CopyTaskConfig copy_config(const TrainArgs& a) {
  CopyTaskConfig c;
  TransformerConfig& t = c.transformer;
  if (a.layers > 0) t.layers = a.layers;
  if (a.heads > 0) t.heads = a.heads;
  if (a.d_model > 0) t.d_model = a.d_model, t.ff_dim = 4 * a.d_model;
  check(t.d_model % t.heads == 0, "--d-model " + std::to_string(t.d_model) + " is not a multiple of --heads " +
                                      std::to_string(t.heads));
  t.head_dim = t.d_model / t.heads;
  if (a.ff_dim > 0) t.ff_dim = a.ff_dim;
  t.set_attention(a.attention);
  t.feature_map = a.feature_map;
  t.ff_conv = a.ff_conv;
  t.features = a.features;
  if (a.dropout >= 0) t.dropout = a.dropout;
  return c;
}

int64_t copy_batch(const TrainArgs& a) { return a.batch > 0 ? a.batch : 64; }

Evaluation evaluate_copy(SequenceModel& model, uint64_t seed, int64_t batch, const Precision& precision = {}) {
  CopyTrainingTask task(copy_task_of(model.config()), seed, batch);
  ReplicaSet replicas(model, batch);
  ForwardOptions options;
  options.precision = precision;
  return task.evaluate(replicas, options);
}

// The copy task for lt-train's run: its flags and its result line.
class CopyRun final : public TaskRun {
 public:
  SequenceModel& resume(const std::string& path, const TrainArgs& a, Device d) override {
    model_ = load_copy_model(path, d);
    check_resumed_architecture(a, transformer_fields(copy_config(a).transformer, model_->config().transformer), path);
    return *model_;
  }
  SequenceModel& start(const TrainArgs& a, Device d) override {
    CopyTaskConfig c = copy_config(a);
    c.validate();
    model_ = std::make_unique<SequenceModel>(c.sequence_config(), d);
    model_->init_parameters(a.seed);
    return *model_;
  }
  int64_t default_batch() const override { return 64; }
  int64_t steps_per_epoch(int64_t) const override { return 100; }  // the reference's epochs of 100 batches
  Schedule schedule(const TrainArgs& a, int64_t steps) const override {
    Schedule s = a.make_schedule(1e-3f, steps);
    if (a.schedule == "step" && a.milestones.empty()) s.milestones = {3000};  // the paper's lr / 10
    return s;
  }
  std::map<std::string, std::string> metadata(const TrainArgs&) const override { return {}; }
  TrainingTask& task(const TrainArgs& a, int64_t batch) override {
    task_ = std::make_unique<CopyTrainingTask>(copy_task_of(model_->config()), a.seed, batch);
    return *task_;
  }
  std::string description() const override {
    return "copy task L=" + std::to_string(model_->config().max_positions) + ", " +
           std::to_string(model_->config().vocabulary - 1) + " symbols";
  }
  bool reports_bits() const override { return false; }
  nlohmann::json finish(const TrainArgs& a, int64_t step, int64_t batch, const Precision& eval) override {
    const Evaluation e = evaluate_copy(*model_, a.seed, batch, eval);
    std::printf("%s: step %lld, test loss %.4f, accuracy %.4f\n", a.output.c_str(), (long long)step, e.loss,
                e.accuracy);
    return {{"event", "eval"}, {"step", step}, {"test_loss", e.loss}, {"test_accuracy", e.accuracy}};
  }

 private:
  std::unique_ptr<SequenceModel> model_;
  std::unique_ptr<CopyTrainingTask> task_;
};

}  // namespace

int run_copy_training(const TrainArgs& a, const std::atomic<bool>& stop) {
  CopyRun run;
  return run_training(a, run, stop);
}

int run_copy_eval(const TrainArgs& a) {
  const Device device = parse_device(a.device);
  require_device(device);
  auto model = load_copy_model(a.model, device);
  const Evaluation e = evaluate_copy(*model, a.seed, copy_batch(a), training_precision(a.bf16, a.tf32, device));
  if (a.format == "json")
    std::cout << nlohmann::json{{"loss", e.loss}, {"accuracy", e.accuracy}, {"sequences", e.examples}, {"model", a.model}}
                     .dump()
              << "\n";
  else
    std::printf("copy task: loss %.4f, accuracy %.4f on %lld test sequences\n", e.loss, e.accuracy,
                (long long)e.examples);
  return 0;
}

// The model without the optimizer state, with its test accuracy.
int run_copy_export(const TrainArgs& a, const Checkpoint& ck) {
  auto model = load_copy_model(a.model, parse_device(a.device));
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : ck.metadata)
    if (!model->metadata().count(k)) meta[k] = v;
  average_models(a, ck, model->params(), model->metadata(), meta);
  const Evaluation e = evaluate_copy(*model, a.seed, copy_batch(a));
  meta["test_accuracy"] = std::to_string(e.accuracy);
  meta["test_loss"] = std::to_string(e.loss);
  add_notes(a, meta);
  std::printf("%s: test loss %.4f, accuracy %.4f on %lld test sequences\n", a.output.c_str(), e.loss, e.accuracy,
              (long long)e.examples);
  model->save(a.output, meta);
  return 0;
}

}  // namespace lt::app
