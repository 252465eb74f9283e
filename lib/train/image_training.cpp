// The image model's training loop and its test-split evaluation.
#include "lt/image_training.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "lt/error.h"

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
}  // namespace

void check_image_size(const ImageModel& model, const ImageSet& set) {
  const ImageModelConfig& c = model.config();
  check(set.height == c.height && set.width == c.width && set.channels == c.channels,
        set.source + ": images are " + std::to_string(set.height) + "x" + std::to_string(set.width) + "x" +
            std::to_string(set.channels) + ", the model expects " + std::to_string(c.height) + "x" +
            std::to_string(c.width) + "x" + std::to_string(c.channels));
}

void gather_images(const ImageSet& set, const std::vector<int64_t>& indices, Tensor& tokens) {
  const int64_t S = set.image_bytes(), B = int64_t(indices.size());
  std::vector<int32_t> v(B * S);
  for (int64_t i = 0; i < B; ++i) {
    const uint8_t* src = set.pixels.data() + indices[i] * S;
    for (int64_t j = 0; j < S; ++j) v[i * S + j] = src[j];
  }
  tokens.copy_from(Tensor::from_vector(v, {B, S}));
}

static int64_t images_to_evaluate(const ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit) {
  check_image_size(model, set);
  check(batch >= 1, "evaluation batch must be >= 1");
  const int64_t n = limit > 0 ? std::min(limit, set.count) : set.count;
  check(n > 0, set.source + ": no images to evaluate");
  return n;
}

ImageEvaluation evaluate_images(ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit) {
  const int64_t n = images_to_evaluate(model, set, batch, limit);
  double total = 0;
  std::vector<int64_t> idx;
  ReplicaSet replicas(model, batch);
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t B = std::min(batch, n - start);
    idx.resize(B);
    for (int64_t i = 0; i < B; ++i) idx[i] = start + i;
    Tensor tokens = Tensor::empty({B, set.image_bytes()}, model.device(), DType::i32);
    gather_images(set, idx, tokens);
    total += replicas.forward(tokens) * double(B);
  }
  return evaluation(total, n);
}

ImageEvaluation evaluate_images_recurrent(ImageModel& model, const ImageSet& set, int64_t batch, int64_t limit) {
  const int64_t n = images_to_evaluate(model, set, batch, limit);
  const int64_t S = set.image_bytes(), L = model.config().sequence_length();
  const Device d = model.device();
  model.pack_step_weights();
  double total = 0;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t B = std::min(batch, n - start);
    Tensor state = model.new_state(B), head = Tensor::empty({B, model.config().head_width()}, d);
    Tensor nll = Tensor::empty({B}, d);
    // The batch's subpixels position-major [S, B], on the device once: row t
    // is what step t reads and what step t - 1 is scored on.
    std::vector<int32_t> columns(S * B);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < S; ++t) columns[t * B + b] = set.pixels[(start + b) * S + t];
    const Tensor by_position = Tensor::from_vector(columns, {S, B}, d);
    auto subpixel = [&](int64_t t) { return by_position.rows(t, t + 1).reshape({B}); };
    for (int64_t t = 0; t < L; ++t) {  // reads subpixel t, scores subpixel t + 1
      model.step(state, subpixel(t), t, head);
      model.log_loss(head, subpixel(t + 1), nll);
      for (float v : nll.to_vector()) total += v;
    }
  }
  return evaluation(total / double(L), n);
}

void save_training_checkpoint(const std::string& path, const ImageModel& model, const Trainer& trainer,
                              const std::map<std::string, std::string>& metadata) {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta = metadata;
  trainer.save_state(tensors, meta);
  model.save(path, meta, tensors);
}

TrainResult train_image_model(ImageModel& model, Trainer& trainer, const TrainOptions& options,
                              const ImageDataset& data, const ImageTrainSettings& s,
                              const std::function<void(const TrainEvent&)>& on_event,
                              const std::atomic<bool>* stop) {
  check_image_size(model, data.train);
  check(s.batch >= 1, "batch must be >= 1");
  BatchOrder order(data.train.count, options.seed);
  std::vector<int64_t> idx;
  Tensor tokens = Tensor::empty({s.batch, data.train.image_bytes()}, model.device(), DType::i32);
  ReplicaSet replicas(model, s.batch);
  auto emit = [&](TrainEvent e) {
    if (on_event) on_event(e);
  };
  auto checkpoint = [&] {
    if (s.checkpoint.empty()) return;
    save_training_checkpoint(s.checkpoint, model, trainer, s.metadata);
    TrainEvent e;
    e.kind = TrainEvent::checkpoint;
    e.step_index = trainer.step();
    e.epoch = order.epoch(trainer.step(), s.batch);
    e.path = s.checkpoint;
    emit(e);
  };

  const auto start = std::chrono::steady_clock::now();
  const int64_t first = trainer.step();
  TrainResult result;
  while (trainer.step() < s.steps) {
    if (stop && stop->load()) {
      checkpoint();
      result.status = TrainStatus::interrupted;
      result.step = trainer.step();
      return result;
    }
    const int64_t t = trainer.step();
    order.batch(t, s.batch, idx);
    gather_images(data.train, idx, tokens);
    double loss = replicas.forward_backward(tokens, trainer.dropout_seed());
    if (!std::isfinite(loss)) {
      result.status = TrainStatus::diverged;
      result.step = t;
      result.message = "loss is " + std::string(std::isnan(loss) ? "NaN" : "Inf") + " at step " +
                       std::to_string(t + 1) + "; stopped without updating" +
                       (s.checkpoint.empty() ? std::string() : ", " + s.checkpoint + " keeps the last good state");
      return result;
    }
    float lr = trainer.update();

    TrainEvent e;
    e.step_index = trainer.step();
    e.loss = loss;
    e.bits_per_dim = loss / std::log(2.0);
    e.lr = lr;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    e.examples_per_s = secs > 0 ? double(trainer.step() - first) * double(s.batch) / secs : 0;
    e.epoch = order.epoch(trainer.step(), s.batch);
    emit(e);

    if (s.eval_every > 0 && trainer.step() % s.eval_every == 0 && data.test.count > 0) {
      ScopedCpuBf16Matmul fp32(false);  // test bits/dim comparable across runs, bf16 or not
      ImageEvaluation ev = evaluate_images(model, data.test, s.batch, s.eval_images);
      TrainEvent te;
      te.kind = TrainEvent::eval;
      te.step_index = trainer.step();
      te.loss = ev.nats_per_dim;
      te.bits_per_dim = ev.bits_per_dim;
      te.epoch = e.epoch;
      emit(te);
    }
    if (s.checkpoint_every > 0 && trainer.step() % s.checkpoint_every == 0 && trainer.step() < s.steps) checkpoint();
  }
  checkpoint();
  result.step = trainer.step();
  return result;
}

}  // namespace lt
