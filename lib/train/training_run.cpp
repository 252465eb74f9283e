// The one training run, for every task family: resume or start, optimizer
// and schedule, the loop's settings and checkpoint metadata, the report of
// its events, the final score.
#include "train/training_run.h"

#include <sys/stat.h>

#include <cstdio>

#include "backend/blas_description.h"
#include "backend/device.h"
#include "common/error.h"
#include "core/precision_flags.h"
#include "run_report.h"
#include "task_family.h"
#include "train/world.h"

namespace lt {

namespace {
bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Options given that the task cannot use, refused before any file is read.
void refuse_foreign_options(const TrainingRecipe& a) {
  if (a.task == "copy") {
    refuse_options(a, kImageOnlyOptions, "--task copy");
    refuse_options(a, kSpeechOnlyOptions, "--task copy");
  }
  if (a.task == "asr") refuse_options(a, kImageNotSpeechOptions, "--task asr");
  if (a.encoder == "bilstm") refuse_options(a, kTransformerOnlyOptions, "--encoder bilstm");
  if (a.task == "image") refuse_options(a, kSpeechOnlyOptions, "--task image");
}

std::unique_ptr<TaskFamily> training_family(const TrainingRecipe& a) {
  if (a.task == "copy") return copy_family();
  if (a.task == "asr") return speech_family();
  check(a.task == "image", "--task must be image, copy or asr, got '" + a.task + "'");
  return image_family(a.data);
}
}  // namespace

TrainResult run_training(const TrainingRecipe& recipe, const std::atomic<bool>* stop,
                         const std::function<void(const TrainEvent&)>& on_event) {
  refuse_recurrent(recipe);
  refuse_export_options(recipe);
  refuse_foreign_options(recipe);
  std::unique_ptr<TaskFamily> family = training_family(recipe);
  TaskFamily& run = *family;
  TrainingRecipe a = recipe;
  // Every rank trains; rank 0 alone prints, logs and writes.
  World& world = World::get();
  if (!world.leader()) a.quiet = true, a.log.clear();
  const Device device = parse_device(a.device);
  require_device(device);
  check(a.gpu_sum == "nccl" || a.gpu_sum == "host", "--gpu-sum must be nccl or host, got '" + a.gpu_sum + "'");
  check(device == Device::cuda || !a.given.count("--gpu-sum"), "--gpu-sum applies to -d cuda");
  world.use_device(device, a.gpu_sum == "host" ? World::GpuSum::host : World::GpuSum::nccl);
  check(a.memory_limit >= 0, "--memory-limit must be >= 0 GB");
  set_memory_limit(device, size_t(a.memory_limit * 1e9));
  const bool resuming = a.resume && file_exists(a.output);
  check(a.resume || !file_exists(a.output),
        a.output + ": already exists; pass --resume to continue training it, or choose another --output");
  if (resuming) a.adopt(load_safetensors(a.output));
  SequenceModel& model = resuming ? run.resume(a.output, a, device) : run.start(a, device);
  if (a.dropout >= 0) model.set_dropout(a.dropout);  // a training option, whatever the checkpoint had
  const int64_t batch = a.batch > 0 ? a.batch : run.default_batch();
  const int64_t steps = a.steps > 0 ? a.steps : a.epochs * run.steps_per_epoch(batch);
  check(steps > 0, "nothing to train: give --steps or --epochs");

  TrainOptions opt;
  opt.optimizer = a.optimizer;
  opt.schedule = run.schedule(a, steps);
  opt.clip = a.clip;
  opt.seed = a.seed;
  opt.plateau_patience = a.plateau >= 0 ? a.plateau : run.default_plateau();
  Trainer trainer(model.params(), opt);
  if (resuming) trainer.restore(load_safetensors(a.output));

  TrainLoopSettings s;
  s.batch = batch;
  s.micro_batch = a.micro_batch;
  s.steps = steps;
  s.checkpoint_every = a.checkpoint_every;
  s.checkpoint = a.output;
  s.eval_every = a.eval_every;
  s.redraw_every = a.feature_redraw;
  s.precision = training_precision(a.bf16, a.tf32, device);
  s.metadata = run.metadata(a);
  s.tensors = run.tensors();
  for (const auto& [k, v] : recipe_metadata(a, opt.schedule, batch, steps)) s.metadata[k] = v;
  s.metadata["lt.train.plateau"] = std::to_string(opt.plateau_patience);

  if (!a.quiet)
    std::fprintf(stderr,
                 "%s: %s; %s, %lld params; batch %lld, %s lr %g; %s step %lld "
                 "of %lld, seed %llu, %s%s, %d threads%s%s\n",
                 a.name.c_str(), run.description().c_str(), model.config().describe_encoder().c_str(),
                 (long long)model.params().numel(), (long long)batch,
                 a.optimizer.c_str(), opt.schedule.lr, resuming ? "resuming at" : "from", (long long)trainer.step(),
                 (long long)steps, (unsigned long long)a.seed,
                 world.size() > 1 ? (std::to_string(world.size()) + " ranks of ").c_str() : "",
                 device_description(device).c_str(), num_threads(),
                 device == Device::cpu ? (", " + blas_description()).c_str() : "",
                 s.precision == Precision{} ? "" : (", " + s.precision.describe()).c_str());

  MetricsLog log(a.log);
  Progress progress(steps, a.quiet, 10.0, trainer.step());
  const std::function<void(const TrainEvent&)> report = report_events(log, progress, run.reports_bits(), a.quiet);
  TrainResult r = train_model(model, trainer, run.task(a, batch), s,
                              [&](const TrainEvent& e) {
                                report(e);
                                if (on_event) on_event(e);
                              },
                              stop);
  progress.finish();
  if (r.status == TrainStatus::finished) {
    const TaskFamily::FinalScore score = run.finish(a, r.step, batch, s.eval_precision);
    r.score = score.line;
    log.write(score.event);
  }
  return r;
}

}  // namespace lt
