// The training loop every task shares.
#include "train/training_loop.h"

#include <chrono>
#include <cmath>

#include "common/error.h"
#include "common/random.h"
#include "train/world.h"

namespace lt {

void save_training_checkpoint(const std::string& path, const SequenceModel& model, const Trainer& trainer,
                              const std::map<std::string, std::string>& metadata,
                              const std::map<std::string, Tensor>& task_tensors) {
  std::map<std::string, Tensor> tensors = task_tensors;
  std::map<std::string, std::string> meta = metadata;
  trainer.save_state(tensors, meta);
  model.save(path, meta, tensors);
}

TrainResult train_model(SequenceModel& model, Trainer& trainer, TrainingTask& task, const TrainLoopSettings& s,
                        const std::function<void(const TrainEvent&)>& on_event, const std::atomic<bool>* stop) {
  check(s.batch >= 1, "batch must be >= 1");
  s.precision.check_runs_on(model.device());
  s.eval_precision.check_runs_on(model.device());
  check(s.micro_batch >= 0, "micro-batch must be >= 0, got " + std::to_string(s.micro_batch));
  World& world = World::get();
  check(s.batch >= world.size(), "a training batch of " + std::to_string(s.batch) +
                                     " rows needs at least one row per rank (" + std::to_string(world.size()) +
                                     " ranks)");
  SequenceBatch batch;
  ReplicaSet replicas(model, s.batch, s.micro_batch);
  // Rank 0 reports and writes; every rank computes.
  auto emit = [&](const TrainEvent& e) {
    if (on_event && world.leader()) on_event(e);
  };
  std::map<std::string, std::string> metadata = s.metadata;
  metadata["lt.train.world_size"] = std::to_string(world.size());
  const auto start = std::chrono::steady_clock::now();
  auto counted = start;  // training time up to here is in trainer.seconds()
  auto count_time = [&] {
    const auto now = std::chrono::steady_clock::now();
    trainer.add_seconds(std::chrono::duration<double>(now - counted).count());
    counted = now;
  };
  // The step of the checkpoint on disk: a resumed run's own, or the last written.
  int64_t last_saved = trainer.step() > 0 ? trainer.step() : -1;
  auto checkpoint = [&] {
    if (s.checkpoint.empty()) return;
    count_time();
    // Every rank must hold the same weights; one that drifted (a
    // non-deterministic reduction, a bad device) stops the run here. A
    // process alone has nothing to compare (the checksum copies every weight).
    if (world.size() > 1)
      world.check_same(checksum(model.params().values()), "the weights at step " + std::to_string(trainer.step()));
    if (world.leader()) save_training_checkpoint(s.checkpoint, model, trainer, metadata, s.tensors);
    last_saved = trainer.step();
    TrainEvent e;
    e.kind = TrainEvent::checkpoint;
    e.step_index = trainer.step();
    e.epoch = task.epoch(trainer.step(), s.batch);
    e.path = s.checkpoint;
    emit(e);
  };
  ForwardOptions train;
  train.train = true;
  train.precision = s.precision;
  ForwardOptions eval;
  eval.precision = s.eval_precision;

  // A pass that ran out of memory has made ReplicaSet split the batch: say so once.
  int64_t micro_batch = replicas.micro_batch();
  auto note_micro_batch = [&] {
    if (replicas.micro_batch() == micro_batch) return;
    micro_batch = replicas.micro_batch();
    TrainEvent e;
    e.kind = TrainEvent::micro_batch;
    e.step_index = trainer.step();
    e.rows = micro_batch;
    emit(e);
  };

  const int64_t first = trainer.step();
  TrainResult result;
  while (trainer.step() < s.steps) {
    if (world.any(stop && stop->load())) {
      checkpoint();
      result.status = TrainStatus::interrupted;
      result.step = trainer.step();
      return result;
    }
    const int64_t t = trainer.step();
    task.batch(t, s.batch, batch);
    train.seed = trainer.dropout_seed();
    const BatchScore score = replicas.forward_backward(batch, train, task.reports_accuracy());
    note_micro_batch();
    if (!std::isfinite(score.loss)) {
      result.status = TrainStatus::diverged;
      result.step = t;
      std::string kept;
      if (!s.checkpoint.empty())
        kept = last_saved >= 0 ? ", " + s.checkpoint + " keeps step " + std::to_string(last_saved)
                               : ", and no checkpoint was written before it";
      result.message = "loss is " + std::string(std::isnan(score.loss) ? "NaN" : "Inf") + " at step " +
                       std::to_string(t + 1) + "; stopped without updating" + kept;
      return result;
    }
    const float lr = trainer.update();
    // A function of the step: a resumed run redraws where the straight one did.
    if (s.redraw_every > 0 && trainer.step() % s.redraw_every == 0)
      model.redraw_feature_maps(splitmix64(trainer.dropout_seed() ^ 0xFEA7u));

    TrainEvent e;
    e.step_index = trainer.step();
    e.loss = score.loss;
    if (task.reports_accuracy()) e.accuracy = score.accuracy;
    e.lr = lr;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    e.examples_per_s = secs > 0 ? double(trainer.step() - first) * double(s.batch) / secs : 0;
    e.epoch = task.epoch(trainer.step(), s.batch);
    emit(e);

    if (s.eval_every > 0 && trainer.step() % s.eval_every == 0 && task.has_test_data()) {
      const Evaluation ev = task.evaluate(replicas, eval);
      note_micro_batch();
      TrainEvent te;
      te.kind = TrainEvent::eval;
      te.step_index = trainer.step();
      te.loss = ev.loss;
      te.accuracy = ev.accuracy;
      te.error_rate = ev.error_rate;
      te.epoch = e.epoch;
      trainer.report_evaluation(ev.loss);
      emit(te);
    }
    if (s.checkpoint_every > 0 && trainer.step() % s.checkpoint_every == 0 && trainer.step() < s.steps) checkpoint();
  }
  checkpoint();
  result.step = trainer.step();
  return result;
}

}  // namespace lt
