// The copy task of the paper (section 4.1.1, Figure 2), as the reference's
// causal-copy experiment: a row holds n random symbols 1..S, a separator 0,
// the same n symbols again and zero padding to L (n uniform in [L/4, (L-1)/2)).
// The model predicts the next token everywhere; loss and accuracy count the
// positions n-1 .. 2n-1 (the separator and the copy). A copy model is a
// SequenceModel of family "copy": S + 1 tokens in, a categorical head over
// them out.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "model/sequence_model.h"
#include "train/training_loop.h"

namespace lt {

struct CopyTaskConfig {
  int64_t sequence_length = 128;
  int64_t symbols = 10;  // vocabulary: symbols + 1 with the separator / padding 0
  TransformerConfig transformer{4, 8, 32, 256, 1024};
  void validate() const;
  SequenceModelConfig sequence_config() const;
};

// Row r of batch `step` is a function of (seed, step, r) only.
void make_copy_batch(const CopyTaskConfig& config, uint64_t seed, int64_t step, int64_t rows, SequenceBatch& batch);

// The task a copy model was trained on, from its config.
CopyTaskConfig copy_task_of(const SequenceModelConfig& model);
// Reads a copy-task checkpoint (lt.model "copy"); errors name the file.
std::unique_ptr<SequenceModel> load_copy_model(const std::string& path, Device device);
std::unique_ptr<SequenceModel> load_copy_model(const Checkpoint& checkpoint, Device device);

// The copy task for the training loop: batches from (seed, step); test
// scores over 20 batches of held-out sequences (as the reference's evaluate()),
// always of 64 rows (the reference's batch): the test set is a function of
// the seed alone, whatever batch a run trains or evaluates with, so a model
// has one test score.
class CopyTrainingTask final : public TrainingTask {
 public:
  CopyTrainingTask(const CopyTaskConfig& config, uint64_t seed) : config_(config), seed_(seed) {}
  void batch(int64_t step, int64_t rows, SequenceBatch& out) override {
    make_copy_batch(config_, seed_, step, rows, out);
  }
  // The reference runs epochs of 100 batches.
  double epoch(int64_t step, int64_t) const override { return double(step) / 100.0; }
  Evaluation evaluate(ReplicaSet& replicas, const ForwardOptions& options) override;
  bool reports_accuracy() const override { return true; }
  static constexpr int64_t kTestBatches = 20;
  static constexpr int64_t kTestRows = 64;

 private:
  CopyTaskConfig config_;
  uint64_t seed_;
};

}  // namespace lt
