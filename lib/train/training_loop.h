// The one training loop, for every task: batch order, data parallelism over
// ranks and CPU threads (ReplicaSet), clip and update, Ctrl-C, a NaN stop, atomic
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

#include "model/sequence_model.h"
#include "train/trainer.h"

namespace lt {

// A batch's mean loss (nats per counted position) and, when asked, the
// fraction of counted positions whose most likely class is the target.
struct BatchScore {
  double loss = 0;
  double accuracy = 0;
};

// Data parallelism for one training step, over the ranks of the World and,
// within a rank, over CPU threads: the step's batch is split into contiguous
// rows, rank r taking its share in the batch's order, and thread t of a rank
// running whole forward and backward passes over its part on replica t, which
// reads the model's weights and keeps its own gradients and activations
// (replica 0 is the model itself), every product inside single-threaded. For
// the small matrices of a CPU-sized model this uses the cores far better than
// threading each product (6 layers x 128 on 2 cores: 15 -> 22 images/s).
// A rank's rows may run as micro-batches, one after another, when the whole
// share does not fit a device's memory: asked for, or found when a pass runs
// out of memory (lt::OutOfMemory), which halves the passes until they fit
// and keeps that size for later steps.
//
// Every part's loss is its summed nats over the counted positions of the
// whole batch, so the parts' gradients add up to the batch's mean in any
// split; dropout masks follow the batch row (ForwardOptions::first_row).
// Splits therefore change only the order of float summation: 2 ranks of one
// thread and 1 rank of 2 threads give the same bits, micro-batches agree to
// fp32 rounding, and each is bitwise reproducible. One replica per thread, at
// most one per row; on CUDA, one per rank.
class ReplicaSet {
 public:
  // batch: the most rows a step passes; micro_batch: the most rows one
  // forward pass of a rank takes (0: its whole share).
  ReplicaSet(SequenceModel& model, int64_t batch, int64_t micro_batch = 0);
  ~ReplicaSet();
  int64_t replicas() const { return int64_t(extra_.size()) + 1; }
  SequenceModel& model() { return model_; }
  // Leaves the batch's gradient, summed over the ranks, in the model's
  // params().grads(), which must start at zero (as Trainer::update leaves
  // them). Every rank passes the whole batch and gets the whole batch's
  // score. A non-finite loss (on any rank) leaves no gradient.
  BatchScore forward_backward(const SequenceBatch& batch, const ForwardOptions& options, bool accuracy = false);
  // Without gradients (options.train false for an evaluation), split the same way.
  BatchScore forward(const SequenceBatch& batch, const ForwardOptions& options, bool accuracy = false);
  // The most rows of a pass: as asked, or as found to fit (0: a rank's whole share).
  int64_t micro_batch() const { return micro_batch_; }

 private:
  // The rank's rows [begin, end) in passes of micro_batch_ rows, halved
  // after a pass runs out of memory until one row does not fit.
  BatchScore passes(const SequenceBatch& batch, int64_t begin, int64_t end, int64_t normalizer,
                    const ForwardOptions& options, bool accuracy, bool backward);
  // Rows [begin, end) of batch over the threads; scores are shares of normalizer.
  BatchScore run(const SequenceBatch& batch, int64_t begin, int64_t end, int64_t normalizer,
                 const ForwardOptions& options, bool accuracy, bool backward);
  SequenceModel& model_;
  int64_t micro_batch_;
  std::vector<std::unique_ptr<SequenceModel>> extra_;
  std::vector<ForwardPass> passes_;  // replica r's forward for its backward
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
  int64_t batch = 16;              // of a step, over all ranks
  int64_t micro_batch = 0;         // the most rows one forward pass of a rank takes (0: its whole share)
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
  enum Kind { step, eval, checkpoint, micro_batch } kind = step;
  int64_t step_index = 0;     // updates done
  double loss = 0;            // step: the batch's mean nats per counted position; eval: the test's
  double accuracy = -1;       // when the task reports one
  double error_rate = -1;     // eval: when the task reports one (speech: PER)
  double lr = 0;
  double examples_per_s = 0;  // step: since the start of this run
  double epoch = 0;
  std::string path;  // checkpoint
  int64_t rows = 0;  // micro_batch: the rows of a pass from here on, found when a larger pass ran out of memory
};

enum class TrainStatus { finished, interrupted, diverged };

struct TrainResult {
  TrainStatus status = TrainStatus::finished;
  int64_t step = 0;
  std::string message;  // diverged: which step and what was kept
  std::string score;    // run_training, finished: the trained model's test score, one line
};

// Trains from trainer.step() to settings.steps, on every rank of the World
// (train/world.h) in step. Checkpoints (model, optimizer, step; the world's size
// in lt.train.world_size) are written atomically by rank 0 every
// checkpoint_every steps, at the end and when *stop becomes true on any rank
// (checked between steps); before each, the ranks compare a checksum of their
// weights. Events go to rank 0's on_event. A NaN or Inf loss stops
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
