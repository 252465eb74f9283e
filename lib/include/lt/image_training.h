// Training and evaluating the image model on an ImageSet: the loop behind
// lt-train's image task (checkpoints, interruption, divergence), and
// bits/dim on a test split.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lt/dataset.h"
#include "lt/image_model.h"
#include "lt/train.h"

namespace lt {

struct ImageEvaluation {
  double nats_per_dim = 0;  // mean negative log-likelihood per predicted subpixel
  double bits_per_dim = 0;  // nats_per_dim / ln 2
  int64_t images = 0;
};

// Teacher-forced, no dropout, the first `limit` images (0 = all) in batches.
ImageEvaluation evaluate_images(ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit = 0);
// The same through the recurrent step, position by position, at the model's
// step precision, as generation runs: equal to evaluate_images up to float
// rounding in fp32, and a measure of what bf16 steps cost.
ImageEvaluation evaluate_images_recurrent(ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit = 0);

// Throws, naming set.source and both sizes, unless the set's images have the model's size.
void check_image_size(const ImageModel& model, const ImageSet& set);

// Copies images `indices` of set into tokens int32 [indices.size(), subpixels].
void gather_images(const ImageSet& set, const std::vector<int64_t>& indices, Tensor& tokens);

// Data parallelism on the CPU for one training step: thread r runs whole
// forward and backward passes over its share of the batch on replica r, which
// reads the model's weights and keeps its own gradients and activations
// (replica 0 is the model itself), every product inside single-threaded. For
// the small matrices of a CPU-sized model this uses the cores far better than
// threading each product (6 layers x 128 on 2 cores: 15 -> 22 images/s).
// Gradients are summed in replica order: bitwise reproducible for a given
// thread count. Dropout masks depend on the split (replica r mixes r into the
// step's seed). One replica per thread, at most one per image; on CUDA, one.
class ReplicaSet {
 public:
  ReplicaSet(ImageModel& model, int64_t batch);
  ~ReplicaSet();
  int64_t replicas() const { return int64_t(extra_.size()) + 1; }
  // The batch's mean loss (nats per subpixel); leaves its gradient in the
  // model's params().grads(), which must start at zero (as Trainer::update
  // leaves them).
  double forward_backward(const Tensor& images, uint64_t seed);
  // The mean loss without dropout or gradients (evaluation), split the same way.
  double forward(const Tensor& images);

 private:
  template <class Pass>
  std::vector<double> run(const Tensor& images, Pass&& pass);
  double share(int64_t replica, int64_t batch) const;
  ImageModel& model_;
  std::vector<std::unique_ptr<ImageModel>> extra_;
};

struct ImageTrainSettings {
  int64_t batch = 16;
  int64_t steps = 1000;             // train until the trainer's step reaches this
  int64_t checkpoint_every = 500;   // steps between checkpoints (0: only at the end)
  std::string checkpoint;           // path; "" writes none
  int64_t eval_every = 0;           // steps between test evaluations (0: never during training)
  int64_t eval_images = 1000;       // test images per evaluation (0: all)
  std::map<std::string, std::string> metadata;  // extra metadata for checkpoints (dataset, ...)
};

struct TrainEvent {
  enum Kind { step, eval, checkpoint } kind = step;
  int64_t step_index = 0;   // updates done
  double loss = 0;          // step: the batch's mean nats per subpixel; eval: test nats per subpixel
  double bits_per_dim = 0;  // loss / ln 2
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
// before the update, leaving the last checkpoint as it was.
TrainResult train_image_model(ImageModel& model, Trainer& trainer, const TrainOptions& options,
                              const ImageDataset& data, const ImageTrainSettings& settings,
                              const std::function<void(const TrainEvent&)>& on_event,
                              const std::atomic<bool>* stop = nullptr);

// Writes model + trainer state + settings.metadata to path (atomic).
void save_training_checkpoint(const std::string& path, const ImageModel& model, const Trainer& trainer,
                              const std::map<std::string, std::string>& metadata);

}  // namespace lt
