// The image task of the training loop, and its test-split evaluations.
#include "train/image_training.h"

#include <cmath>
#include <vector>

#include "common/error.h"

namespace lt {
namespace {
// From the negative log-likelihood in nats summed over the images' mean per subpixel.
ImageEvaluation evaluation(double total, int64_t images) {
  ImageEvaluation e;
  e.images = images;
  e.nats_per_dim = total / double(images);
  e.bits_per_dim = e.nats_per_dim / std::log(2.0);
  return e;
}

// Images `indices` of set as int32 subpixels [indices.size(), subpixels].
void gather(const ImageSet& set, const std::vector<int64_t>& indices, std::vector<int32_t>& out) {
  const int64_t S = set.image_bytes();
  out.resize(indices.size() * S);
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint8_t* src = set.pixels.data() + indices[i] * S;
    for (int64_t j = 0; j < S; ++j) out[i * S + j] = src[j];
  }
}

int64_t images_to_evaluate(const ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit) {
  check_image_size(model, set);
  check(batch >= 1, "evaluation batch must be >= 1");
  const int64_t n = limit > 0 ? std::min(limit, set.count) : set.count;
  check(n > 0, set.source + ": no images to evaluate");
  return n;
}

// Mean nats per subpixel of images 0..n-1 through replicas, batch images at a time.
double mean_nll(const ImageModel& model, const ImageSet& set, int64_t n, int64_t batch, ReplicaSet& replicas,
                const ForwardOptions& options) {
  double total = 0;
  std::vector<int64_t> idx;
  std::vector<int32_t> pixels;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t B = std::min(batch, n - start);
    idx.resize(B);
    for (int64_t i = 0; i < B; ++i) idx[i] = start + i;
    gather(set, idx, pixels);
    total += replicas.forward(model.batch(pixels, B), options).loss * double(B);
  }
  return total;
}
}  // namespace

void check_image_size(const ImageModel& model, const ImageSet& set) {
  const ImageModelConfig& c = model.config();
  check(set.height == c.height && set.width == c.width && set.channels == c.channels,
        set.source + ": images are " + std::to_string(set.height) + "x" + std::to_string(set.width) + "x" +
            std::to_string(set.channels) + ", the model expects " + std::to_string(c.height) + "x" +
            std::to_string(c.width) + "x" + std::to_string(c.channels));
}

ImageEvaluation evaluate_images(ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit,
                                const Precision& precision) {
  const int64_t n = images_to_evaluate(model, set, batch, limit);
  ReplicaSet replicas(model.core(), batch);
  ForwardOptions options;
  options.precision = precision;
  return evaluation(mean_nll(model, set, n, batch, replicas, options), n);
}

ImageEvaluation evaluate_images_recurrent(ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit,
                                          const Precision& precision) {
  const int64_t n = images_to_evaluate(model, set, batch, limit);
  const int64_t S = set.image_bytes(), L = model.config().sequence_length();
  const Device d = model.core().device();
  model.core().prepare_step(precision);
  double total = 0;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t B = std::min(batch, n - start);
    RecurrentState state = model.core().new_state(B, precision.state);
    Tensor head = Tensor::empty({B, model.config().head_width()}, d);
    Tensor nll = Tensor::empty({B}, d);
    // The batch's subpixels position-major [S, B], on the device once: row t
    // is what step t reads and what step t - 1 is scored on.
    std::vector<int32_t> columns(S * B);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < S; ++t) columns[t * B + b] = set.pixels[(start + b) * S + t];
    const Tensor by_position = Tensor::from_vector(columns, {S, B}, d);
    auto subpixel = [&](int64_t t) { return by_position.rows(t, t + 1).reshape({B}); };
    for (int64_t t = 0; t < L; ++t) {  // reads subpixel t, scores subpixel t + 1
      model.core().step(state, subpixel(t), head);
      model.log_loss(head, subpixel(t + 1), nll);
      for (float v : nll.to_vector()) total += v;
    }
  }
  return evaluation(total / double(L), n);
}

ImageTrainingTask::ImageTrainingTask(const ImageModel& model, const ImageDataset& data, uint64_t seed,
                                     int64_t eval_images, int64_t eval_batch)
    : model_(model), data_(data), order_(data.train.count, seed), eval_images_(eval_images), eval_batch_(eval_batch) {
  check_image_size(model, data.train);
}

void ImageTrainingTask::batch(int64_t step, int64_t rows, SequenceBatch& out) {
  order_.batch(step, rows, indices_);
  gather(data_.train, indices_, pixels_);
  out = model_.batch(pixels_, rows);
}

Evaluation ImageTrainingTask::evaluate(ReplicaSet& replicas, const ForwardOptions& options) {
  const int64_t n = images_to_evaluate(model_, data_.test, eval_batch_, eval_images_);
  Evaluation e;
  e.examples = n;
  e.loss = mean_nll(model_, data_.test, n, eval_batch_, replicas, options) / double(n);
  return e;
}

}  // namespace lt
