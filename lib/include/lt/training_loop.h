// The one training loop, for every task: batch order, data parallelism over
// CPU threads (ReplicaSet), clip and update, Ctrl-C, a NaN stop, atomic
// checkpoints, bit-exact resume, periodic evaluation and events for a log.
// A task brings its data and its evaluation (TrainingTask); the model is a
// SequenceModel, so its loss is the model's head.
//
//   MyTask task(...);                          // : lt::TrainingTask
//   lt::Trainer trainer(model.params(), options);
//   lt::train_model(model, trainer, task, settings, on_event, &stop);
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lt/sequence_model.h"
#include "lt/train.h"

namespace lt {

// A batch's mean loss (nats per counted position) and, when asked, the
// fraction of counted positions whose most likely class is the target.
struct BatchScore {
  double loss = 0;
  double accuracy = 0;
};

// Data parallelism on the CPU for one training step: thread r runs whole
// forward and backward passes over its share of the batch on replica r, which
// reads the model's weights and keeps its own gradients and activations
// (replica 0 is the model itself), every product inside single-threaded. For
// the small matrices of a CPU-sized model this uses the cores far better than
// threading each product (6 layers x 128 on 2 cores: 15 -> 22 images/s).
// Shares are weighted by their counted positions, so the result is the
// batch's mean; gradients are summed in replica order: bitwise reproducible
// for a given thread count. Dropout masks depend on the split (replica r
// mixes r into the step's seed). One replica per thread, at most one per
// row; on CUDA, one.
class ReplicaSet {
 public:
  ReplicaSet(SequenceModel& model, int64_t batch);
  ~ReplicaSet();
  int64_t replicas() const { return int64_t(extra_.size()) + 1; }
  SequenceModel& model() { return model_; }
  // Leaves the batch's gradient in the model's params().grads(), which must
  // start at zero (as Trainer::update leaves them). A non-finite loss leaves
  // no gradient.
  BatchScore forward_backward(const SequenceBatch& batch, const ForwardOptions& options, bool accuracy = false);
  // Without gradients (options.train false for an evaluation).
  BatchScore forward(const SequenceBatch& batch, const ForwardOptions& options, bool accuracy = false);

 private:
  template <class Pass>
  std::vector<BatchScore> run(const SequenceBatch& batch, Pass&& pass);
  SequenceModel& model_;
  std::vector<std::unique_ptr<SequenceModel>> extra_;
};

// Scores of a model on a task's test data.
struct Evaluation {
  double loss = 0;        // mean nats per counted position
  double accuracy = -1;   // negative: the task reports none
  double error_rate = -1; // a sequence task's edit-distance rate (speech: PER); negative: none
  int64_t examples = 0;
};

// What a task gives the loop.
class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  // The rows of training step `step`: a function of the step alone, so that
  // a resumed run sees the batches the uninterrupted one would have.
  virtual void batch(int64_t step, int64_t rows, SequenceBatch& out) = 0;
  virtual double epoch(int64_t step, int64_t rows) const = 0;
  // Test scores, without dropout, through replicas of the model.
  virtual Evaluation evaluate(ReplicaSet& replicas, const ForwardOptions& options) = 0;
  virtual bool has_test_data() const { return true; }
  // Whether training steps report the batch's accuracy (categorical tasks).
  virtual bool reports_accuracy() const { return false; }
};

struct TrainLoopSettings {
  int64_t batch = 16;
  int64_t steps = 1000;            // train until the trainer's step reaches this
  int64_t checkpoint_every = 500;  // steps between checkpoints (0: only at the end)
  std::string checkpoint;          // path; "" writes none
  int64_t eval_every = 0;          // steps between test evaluations (0: never during training)
  int64_t redraw_every = 0;        // steps between feature-map redraws (FAVOR+; 0: never)
  std::map<std::string, std::string> metadata;  // the task's and the recipe's, for checkpoints
  std::map<std::string, Tensor> tensors;        // the task's, for checkpoints (a speech front end's statistics)
  Precision precision;       // of the training steps
  Precision eval_precision;  // of evaluations: fp32 by default, so test scores compare across runs
};

struct TrainEvent {
  enum Kind { step, eval, checkpoint } kind = step;
  int64_t step_index = 0;     // updates done
  double loss = 0;            // step: the batch's mean nats per counted position; eval: the test's
  double accuracy = -1;       // when the task reports one
  double error_rate = -1;     // eval: when the task reports one (speech: PER)
  double lr = 0;
  double examples_per_s = 0;  // step: since the start of this run
  double epoch = 0;
  std::string path;  // checkpoint
};

enum class TrainStatus { finished, interrupted, diverged };

struct TrainResult {
  TrainStatus status = TrainStatus::finished;
  int64_t step = 0;
  std::string message;  // diverged: which step and what was kept
};

// Trains from trainer.step() to settings.steps. Checkpoints (model, optimizer,
// step) are written atomically every checkpoint_every steps, at the end and
// when *stop becomes true (checked between steps). A NaN or Inf loss stops
// before the update, leaving the last checkpoint as it was. Each evaluation's
// loss goes to Trainer::report_evaluation (the plateau rule).
TrainResult train_model(SequenceModel& model, Trainer& trainer, TrainingTask& task, const TrainLoopSettings& settings,
                        const std::function<void(const TrainEvent&)>& on_event,
                        const std::atomic<bool>* stop = nullptr);

// Writes model + trainer state + metadata + tensors to path (atomic).
void save_training_checkpoint(const std::string& path, const SequenceModel& model, const Trainer& trainer,
                              const std::map<std::string, std::string>& metadata,
                              const std::map<std::string, Tensor>& tensors = {});

}  // namespace lt
