// The image task for the training loop (training_loop.h), and bits/dim on a
// test split, in the parallel and in the recurrent form.
#pragma once
#include <cstdint>
#include <vector>

#include "io/image_dataset.h"
#include "model/image_model.h"
#include "train/training_loop.h"

namespace lt {

struct ImageEvaluation {
  double nats_per_dim = 0;  // mean negative log-likelihood per predicted subpixel
  double bits_per_dim = 0;  // nats_per_dim / ln 2
  int64_t images = 0;
};

// Teacher-forced, no dropout, the first `limit` images (0 = all) in batches.
ImageEvaluation evaluate_images(ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit = 0,
                                const Precision& precision = {});
// The same through the recurrent step, position by position, at the
// precision given (the samplers': products and state, the head fp32): equal
// to evaluate_images up to float rounding in fp32, and a measure of what bf16
// steps cost.
ImageEvaluation evaluate_images_recurrent(ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit = 0,
                                          const Precision& precision = {});

// Throws, naming set.source and both sizes, unless the set's images have the model's size.
void check_image_size(const ImageModel& model, const ImageSet& set);

// Images of a dataset as training batches (in BatchOrder) and test scores.
class ImageTrainingTask final : public TrainingTask {
 public:
  // Evaluations score eval_images test images (0: all) in batches of eval_batch.
  ImageTrainingTask(const ImageModel& model, const ImageDataset& data, uint64_t seed, int64_t eval_images,
                    int64_t eval_batch);
  void batch(int64_t step, int64_t rows, SequenceBatch& out) override;
  double epoch(int64_t step, int64_t rows) const override { return order_.epoch(step, rows); }
  Evaluation evaluate(ReplicaSet& replicas, const ForwardOptions& options) override;
  bool has_test_data() const override { return data_.test.count > 0; }

 private:
  const ImageModel& model_;
  const ImageDataset& data_;
  BatchOrder order_;
  int64_t eval_images_, eval_batch_;
  std::vector<int64_t> indices_;
  std::vector<int32_t> pixels_;
};

}  // namespace lt
