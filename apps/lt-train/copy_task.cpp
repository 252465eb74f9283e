// lt-train's copy task (paper section 4.1.1): train and evaluate. Batches are
// generated on the fly from (seed, step), so a resumed run sees the same data.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "lt/backend.h"
#include "lt/copy_task.h"
#include "lt/error.h"
#include "lt/safetensors.h"
#include "lt/train.h"
#include "metrics_log.h"
#include "progress.h"
#include "train_tasks.h"

namespace lt::app {

namespace {
constexpr uint64_t kTestSeedOffset = 0x7E57;  // test batches never equal training ones
constexpr int64_t kEvalBatches = 20;          // as the reference's evaluate()

struct CopyScore {
  double loss = 0, accuracy = 0;
};

CopyScore evaluate_copy(CopyModel& model, uint64_t seed, int64_t batch) {
  CopyBatch b;
  CopyScore s;
  for (int64_t i = 0; i < kEvalBatches; ++i) {
    make_copy_batch(model.config(), seed + kTestSeedOffset, i, batch, b);
    double acc = 0;
    s.loss += model.forward(b, false, 0, &acc) / kEvalBatches;
    s.accuracy += acc / kEvalBatches;
  }
  return s;
}

void save_copy_checkpoint(const std::string& path, const CopyModel& model, const Trainer& trainer,
                          const std::map<std::string, std::string>& meta) {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> m = meta;
  trainer.save_state(tensors, m);
  model.save(path, m, tensors);
}
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

}  // namespace

int run_copy_training(const TrainArgs& args, const std::atomic<bool>& stop) {
  TrainArgs a = args;
  const Device device = parse_device(a.device);
  require_device(device);
  struct stat st;
  const bool exists = stat(a.output.c_str(), &st) == 0;
  check(a.resume || !exists,
        a.output + ": already exists; pass --resume to continue training it, or choose another --output");
  std::unique_ptr<CopyModel> model;
  if (a.resume && exists) {
    a.adopt_recipe(load_safetensors(a.output));
    set_cpu_bf16_matmul(a.bf16);
    model = CopyModel::load(a.output, device);
    check_resumed_architecture(a, transformer_fields(copy_config(a).transformer, model->config().transformer),
                               a.output);
    if (a.dropout >= 0) model->set_dropout(a.dropout);  // a training option, whatever the checkpoint had
  } else {
    model = std::make_unique<CopyModel>(copy_config(a), device);
    model->init_parameters(a.seed);
  }
  const int64_t batch = a.batch > 0 ? a.batch : 64;
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
  const std::map<std::string, std::string> meta = recipe_metadata(a, opt.schedule, batch, steps);
  const TransformerConfig& t = model->config().transformer;
  if (!a.quiet)
    std::fprintf(stderr, "lt-train: copy task L=%lld; %lld layers, %lld heads x %lld, %s; batch %lld, %s lr %g; step %lld of %lld\n",
                 (long long)model->config().sequence_length, (long long)t.layers, (long long)t.heads,
                 (long long)t.head_dim, attention_name(t.attention), (long long)batch, a.optimizer.c_str(),
                 opt.schedule.lr, (long long)trainer.step(), (long long)steps);

  MetricsLog log(a.log);
  Progress progress(steps, a.quiet, 10.0, trainer.step());
  CopyBatch b;
  const auto start = std::chrono::steady_clock::now();
  const int64_t first = trainer.step();
  double loss_avg = 0, acc_avg = 0;
  while (trainer.step() < steps) {
    if (stop.load()) {
      save_copy_checkpoint(a.output, *model, trainer, meta);
      progress.finish();
      std::fprintf(stderr, "lt-train: interrupted at step %lld; checkpoint written to %s (continue with --resume)\n",
                   (long long)trainer.step(), a.output.c_str());
      return 130;
    }
    const int64_t t0 = trainer.step();
    make_copy_batch(model->config(), a.seed, t0, batch, b);
    double acc = 0;
    double loss = model->forward(b, true, trainer.dropout_seed(), &acc);
    if (!std::isfinite(loss)) {
      progress.finish();
      std::fprintf(stderr, "lt-train: loss is %s at step %lld; stopped without updating, %s keeps the last good state\n",
                   std::isnan(loss) ? "NaN" : "Inf", (long long)t0 + 1, a.output.c_str());
      return 1;
    }
    model->backward();
    float lr = trainer.update();
    loss_avg = t0 == first ? loss : 0.95 * loss_avg + 0.05 * loss;
    acc_avg = t0 == first ? acc : 0.95 * acc_avg + 0.05 * acc;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double rate = double(trainer.step() - first) * double(batch) / secs;
    log.write({{"event", "train"}, {"step", trainer.step()}, {"loss", loss}, {"accuracy", acc}, {"lr", lr},
               {"examples_per_s", rate}});
    char text[128];
    std::snprintf(text, sizeof text, "loss %.4f acc %.3f lr %.2g %.0f seq/s", loss_avg, acc_avg, lr, rate);
    progress.update(trainer.step(), text);
    const bool last = trainer.step() == steps;
    if (last || (a.checkpoint_every > 0 && trainer.step() % a.checkpoint_every == 0))
      save_copy_checkpoint(a.output, *model, trainer, meta);
    if (a.eval_every > 0 && trainer.step() % a.eval_every == 0 && !last) {
      ScopedCpuBf16Matmul fp32(false);  // scores comparable across runs, bf16 or not
      CopyScore s = evaluate_copy(*model, a.seed, batch);
      log.write({{"event", "eval"}, {"step", trainer.step()}, {"test_loss", s.loss}, {"test_accuracy", s.accuracy}});
      progress.finish();
      if (!a.quiet)
        std::fprintf(stderr, "step %lld: test loss %.4f accuracy %.4f\n", (long long)trainer.step(), s.loss, s.accuracy);
    }
  }
  progress.finish();
  set_cpu_bf16_matmul(false);  // as the evaluations during training
  CopyScore s = evaluate_copy(*model, a.seed, batch);
  log.write({{"event", "eval"}, {"step", trainer.step()}, {"test_loss", s.loss}, {"test_accuracy", s.accuracy}});
  std::printf("%s: step %lld, test loss %.4f, accuracy %.4f\n", a.output.c_str(), (long long)trainer.step(), s.loss,
              s.accuracy);
  return 0;
}

int run_copy_eval(const TrainArgs& a) {
  const Device device = parse_device(a.device);
  require_device(device);
  auto model = CopyModel::load(a.model, device);
  CopyScore s = evaluate_copy(*model, a.seed, a.batch > 0 ? a.batch : 64);
  if (a.format == "json")
    std::cout << nlohmann::json{{"loss", s.loss}, {"accuracy", s.accuracy},
                                {"sequences", kEvalBatches * (a.batch > 0 ? a.batch : 64)}, {"model", a.model}}
                     .dump()
              << "\n";
  else
    std::printf("copy task: loss %.4f, accuracy %.4f on %lld test sequences\n", s.loss, s.accuracy,
                (long long)kEvalBatches * (a.batch > 0 ? a.batch : 64));
  return 0;
}

// The model without the optimizer state, with its test accuracy.
int run_copy_export(const TrainArgs& a, const Checkpoint& ck) {
  auto model = CopyModel::load(a.model, parse_device(a.device));
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : ck.metadata)
    if (!model->metadata().count(k)) meta[k] = v;
  const int64_t batch = a.batch > 0 ? a.batch : 64;
  CopyScore s = evaluate_copy(*model, a.seed, batch);
  meta["test_accuracy"] = std::to_string(s.accuracy);
  meta["test_loss"] = std::to_string(s.loss);
  std::printf("%s: test loss %.4f, accuracy %.4f on %lld test sequences\n", a.output.c_str(), s.loss, s.accuracy,
              (long long)kEvalBatches * batch);
  model->save(a.output, meta);
  return 0;
}

}  // namespace lt::app
