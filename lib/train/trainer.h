// Training: the optimizer loop around a model's explicit forward/backward,
// deterministic data order, and resumable checkpoints (model tensors,
// optimizer moments and the step in one safetensors file).
//
//   lt::Trainer trainer(model.params(), options);
//   trainer.restore(lt::load_safetensors(path));        // when resuming
//   lt::ForwardPass pass;                                // what each forward leaves for its backward
//   while (trainer.step() < options.steps) {
//     model.forward(batch_at(trainer.step()), {.train = true, .seed = trainer.dropout_seed()}, pass);
//     model.backward(pass);
//     trainer.update();                                  // clip, step, zero grads
//   }
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/parameters.h"
#include "optim/optimizer.h"

namespace lt {

struct TrainOptions {
  std::string optimizer = "radam";  // radam (the reference's) or adam
  Schedule schedule;
  // Every parameter tensor's gradient is clipped to this norm on its own, as the
  // reference's RAdam does; 0 disables clipping.
  float clip = 1.0f;
  uint64_t seed = 1;  // data order, dropout and initialisation
  // The learning rate is multiplied by plateau_factor whenever plateau_patience
  // evaluations in a row have not lowered the best test loss (the paper's
  // speech recipe halves it); 0 turns this off.
  int plateau_patience = 0;
  float plateau_factor = 0.5f;
};

class Trainer {
 public:
  Trainer(Parameters& params, const TrainOptions& options);
  // After a backward pass: clips, updates at the scheduled learning rate,
  // zeroes the gradients and advances step(). Returns the learning rate used.
  float update();
  int64_t step() const { return optimizer_->step_count(); }
  // Dropout masks of the next update: a function of the seed and the step only.
  uint64_t dropout_seed() const;
  // A test evaluation's loss, for the plateau rule (TrainOptions); returns
  // whether it lowered the rate. Its state is saved with the optimizer's.
  bool report_evaluation(double loss);
  float lr_scale() const { return lr_scale_; }
  const Optimizer& optimizer() const { return *optimizer_; }
  // Wall seconds of training so far, over every resumed run (the loop adds
  // its own); saved and restored with the optimizer's state.
  double seconds() const { return seconds_; }
  void add_seconds(double s) { seconds_ += s; }

  // Adds "optimizer.exp_avg", "optimizer.exp_avg_sq" and the metadata
  // lt.train.step, lt.train.optimizer, lt.train.seed, lt.train.seconds and the plateau rule's
  // lt.train.lr_scale, lt.train.best_eval, lt.train.evals_without_gain.
  void save_state(std::map<std::string, Tensor>& tensors, std::map<std::string, std::string>& metadata) const;
  // Restores what save_state wrote; errors name the checkpoint's file.
  void restore(const Checkpoint& checkpoint);

 private:
  Parameters& params_;
  TrainOptions options_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<int64_t> segments_;
  float lr_scale_ = 1;
  double best_eval_ = HUGE_VAL;
  int64_t evals_without_gain_ = 0;
  double seconds_ = 0;
};

// Examples in a deterministic order: epoch after epoch, each a permutation of
// 0..n-1 drawn from (seed, epoch). Batch `step` of size B holds positions
// step*B .. step*B+B-1 of that endless stream, so a resumed run sees exactly
// the batches it would have seen.
class BatchOrder {
 public:
  BatchOrder(int64_t n, uint64_t seed);
  void batch(int64_t step, int64_t batch_size, std::vector<int64_t>& indices);
  double epoch(int64_t step, int64_t batch_size) const { return double(step) * double(batch_size) / double(n_); }

 private:
  const std::vector<int64_t>& permutation(int64_t epoch);
  int64_t n_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> perm_;
};

}  // namespace lt
