// A task as lt-train runs it. The run itself, written once in train_run.cpp
// (resume or start, optimizer and schedule, the loop's settings, the report
// of its events, the final score in the log), takes any task.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "lt/training_loop.h"
#include "train_tasks.h"

namespace lt::app {

class TaskRun {
 public:
  virtual ~TaskRun() = default;
  // The model to train: the checkpoint being resumed (architecture flags
  // repeated on the command line must describe it), or a new one.
  virtual SequenceModel& resume(const std::string& path, const TrainArgs& a, Device d) = 0;
  virtual SequenceModel& start(const TrainArgs& a, Device d) = 0;
  virtual int64_t default_batch() const = 0;
  virtual int64_t steps_per_epoch(int64_t batch) const = 0;
  virtual Schedule schedule(const TrainArgs& a, int64_t steps) const = 0;
  // The family's own metadata for checkpoints (an image's geometry, the dataset).
  virtual std::map<std::string, std::string> metadata(const TrainArgs& a) const = 0;
  // Its tensors beside the model's (a speech front end's statistics).
  virtual std::map<std::string, Tensor> tensors() const { return {}; }
  // --plateau when not given: evaluations without gain before the lr halves (0: never).
  virtual int default_plateau() const { return 0; }
  virtual TrainingTask& task(const TrainArgs& a, int64_t batch) = 0;
  virtual std::string description() const = 0;  // the task and its data, for the first line on stderr
  virtual bool reports_bits() const = 0;         // bits/dim (images) or loss and accuracy
  // Scores the trained model on the test data, prints the result line on
  // stdout and returns it as the log's last event.
  virtual nlohmann::json finish(const TrainArgs& a, int64_t step, int64_t batch, const Precision& eval) = 0;
};

int run_training(const TrainArgs& args, TaskRun& run, const std::atomic<bool>& stop);

}  // namespace lt::app
