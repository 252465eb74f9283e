// lt-train's copy task (paper section 4.1.1): train, evaluate and export
// through the shared model, loop and reports. Batches come from (seed,
// step), so a resumed run sees the same data.
#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "lt/backend.h"
#include "lt/copy_task.h"
#include "lt/error.h"
#include "precision_options.h"
#include "train_report.h"
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
  t.attention = parse_attention(a.attention);
  t.feature_map = a.feature_map;
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
}  // namespace

int run_copy_training(const TrainArgs& args, const std::atomic<bool>& stop) {
  TrainArgs a = args;
  const Device device = parse_device(a.device);
  require_device(device);
  struct stat st;
  const bool exists = stat(a.output.c_str(), &st) == 0;
  check(a.resume || !exists,
        a.output + ": already exists; pass --resume to continue training it, or choose another --output");
  std::unique_ptr<SequenceModel> model;
  if (a.resume && exists) {
    a.adopt_recipe(load_safetensors(a.output));
    model = load_copy_model(a.output, device);
    check_resumed_architecture(a, transformer_fields(copy_config(a).transformer, model->config().transformer),
                               a.output);
    if (a.dropout >= 0) model->set_dropout(a.dropout);  // a training option, whatever the checkpoint had
  } else {
    CopyTaskConfig c = copy_config(a);
    c.validate();
    model = std::make_unique<SequenceModel>(c.sequence_config(), device);
    model->init_parameters(a.seed);
  }
  const int64_t batch = copy_batch(a);
  // The reference runs epochs of 100 batches; --epochs counts those here too.
  const int64_t steps = a.steps > 0 ? a.steps : a.epochs * 100;
  TrainOptions opt;
  opt.optimizer = a.optimizer;
  opt.schedule = a.make_schedule(1e-3f, steps);
  if (a.schedule == "step" && a.milestones.empty()) opt.schedule.milestones = {3000};  // the paper's lr / 10
  opt.clip = a.clip;
  opt.seed = a.seed;
  Trainer trainer(model->params(), opt);
  if (a.resume && exists) trainer.restore(load_safetensors(a.output));
  TrainLoopSettings s;
  s.batch = batch;
  s.steps = steps;
  s.checkpoint_every = a.checkpoint_every;
  s.checkpoint = a.output;
  s.eval_every = a.eval_every;
  s.precision = training_precision(a.bf16, a.tf32, device);
  s.metadata = recipe_metadata(a, opt.schedule, batch, steps);
  const TransformerConfig& t = model->config().transformer;
  if (!a.quiet)
    std::fprintf(stderr, "lt-train: copy task L=%lld; %lld layers, %lld heads x %lld, %s; batch %lld, %s lr %g; step %lld of %lld, %d threads\n",
                 (long long)model->config().max_positions, (long long)t.layers, (long long)t.heads,
                 (long long)t.head_dim, attention_name(t.attention), (long long)batch, a.optimizer.c_str(),
                 opt.schedule.lr, (long long)trainer.step(), (long long)steps, num_threads());

  MetricsLog log(a.log);
  Progress progress(steps, a.quiet, 10.0, trainer.step());
  CopyTrainingTask task(copy_task_of(model->config()), a.seed, batch);
  const TrainResult r = train_model(*model, trainer, task, s, report_events(log, progress, false, a.quiet), &stop);
  progress.finish();
  if (r.status != TrainStatus::finished) return report_unfinished(r, a.output);
  const Evaluation e = evaluate_copy(*model, a.seed, batch);
  log.write({{"event", "eval"}, {"step", r.step}, {"test_loss", e.loss}, {"test_accuracy", e.accuracy}});
  std::printf("%s: step %lld, test loss %.4f, accuracy %.4f\n", a.output.c_str(), (long long)r.step, e.loss,
              e.accuracy);
  return 0;
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
  const Evaluation e = evaluate_copy(*model, a.seed, copy_batch(a));
  meta["test_accuracy"] = std::to_string(e.accuracy);
  meta["test_loss"] = std::to_string(e.loss);
  std::printf("%s: test loss %.4f, accuracy %.4f on %lld test sequences\n", a.output.c_str(), e.loss, e.accuracy,
              (long long)e.examples);
  model->save(a.output, meta);
  return 0;
}

}  // namespace lt::app
