// Training: the data order, bitwise resumption from checkpoints (model,
// optimizer moments, step, schedule, dropout), interruption, divergence, and
// the errors of restoring an unsuitable checkpoint.
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "io/safetensors.h"
#include "io/temp_dir.h"
#include "test_util.h"
#include "train/image_training.h"
#include "train/trainer.h"

using namespace lt;
using namespace lt::test;

namespace {

std::vector<int64_t> batch_of(BatchOrder& order, int64_t step, int64_t size) {
  std::vector<int64_t> v;
  order.batch(step, size, v);
  return v;
}

bool is_permutation_of_range(const std::vector<int64_t>& v) {
  std::vector<int64_t> s = v;
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != int64_t(i)) return false;
  return true;
}

// Random 5x4 grey images: 40 to train on, 8 to test.
ImageDataset tiny_dataset(uint64_t seed) {
  Rng rng(seed);
  ImageDataset data;
  data.format = "memory";
  for (ImageSet* s : {&data.train, &data.test}) {
    s->count = s == &data.train ? 40 : 8;
    s->height = 5, s->width = 4, s->channels = 1;
    s->pixels = random_bytes(rng, s->count * s->image_bytes());
    s->source = s == &data.train ? "memory/train" : "memory/test";
  }
  return data;
}

ImageModelConfig tiny_model_config() {
  ImageModelConfig c;
  c.height = 5, c.width = 4, c.channels = 1;
  c.mixtures = 2;
  // Dropout on: resumption must reproduce the masks too.
  c.transformer = TransformerConfig{2, 2, 4, 8, 16, AttentionKind::linear, Direction::causal, "elu", 0.1f};
  return c;
}

TrainOptions cosine_options(const std::string& optimizer, int64_t total) {
  TrainOptions o;
  o.optimizer = optimizer;
  o.schedule.kind = ScheduleKind::cosine;
  o.schedule.lr = 5e-3f;
  o.schedule.warmup_steps = 3;
  o.schedule.total_steps = total;
  o.schedule.min_lr = 1e-4f;
  o.seed = 99;
  return o;
}

std::vector<float> floats(const Tensor& t) { return t.to_vector(); }

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Model values, moments and step of a model trained to `steps` in one call.
struct TrainedState {
  std::vector<float> values, exp_avg, exp_avg_sq;
  int64_t step = 0;
};

TrainedState state_of(ImageModel& model, const Trainer& trainer) {
  TrainedState s;
  s.values = floats(model.core().params().values());
  s.exp_avg = floats(trainer.optimizer().state().at("exp_avg"));
  s.exp_avg_sq = floats(trainer.optimizer().state().at("exp_avg_sq"));
  s.step = trainer.step();
  return s;
}

void check_same(const TrainedState& a, const TrainedState& b) {
  CHECK(a.step == b.step);
  CHECK(bitwise_equal(a.values, b.values));
  CHECK(bitwise_equal(a.exp_avg, b.exp_avg));
  CHECK(bitwise_equal(a.exp_avg_sq, b.exp_avg_sq));
}

// The image task through the one training loop, as lt-train runs it.
TrainResult train_images(ImageModel& model, Trainer& trainer, const TrainOptions& opt, const ImageDataset& data,
                         TrainLoopSettings s, const std::function<void(const TrainEvent&)>& on_event,
                         const std::atomic<bool>* stop = nullptr) {
  for (const auto& [k, v] : model.core().metadata()) s.metadata[k] = v;
  ImageTrainingTask task(model, data, opt.seed, 0, s.batch);
  return train_model(model.core(), trainer, task, s, on_event, stop);
}

// A batch whose inputs hold a token the model does not have (ImageModel::batch
// checks only the targets' bytes).
SequenceBatch bad_tokens(const ImageModel& model, std::vector<int32_t> px, int64_t B) {
  SequenceBatch b = model.batch(px, B);
  b.inputs.back() = 256;
  return b;
}

TrainedState train_straight(const ImageDataset& data, const TrainOptions& opt, const TrainLoopSettings& s,
                            uint64_t init_seed) {
  ImageModel model(tiny_model_config(), Device::cpu);
  model.core().init_parameters(init_seed);
  Trainer trainer(model.core().params(), opt);
  TrainResult r = train_images(model, trainer, opt, data, s, nullptr);
  CHECK(r.status == TrainStatus::finished);
  CHECK(r.step == s.steps);
  return state_of(model, trainer);
}

// Loads path as lt-train --resume does and trains to s.steps.
TrainedState resume_from(const std::string& path, const ImageDataset& data, const TrainOptions& opt,
                         TrainLoopSettings s) {
  auto model = ImageModel::load(path, Device::cpu);
  Trainer trainer(model->core().params(), opt);
  trainer.restore(load_safetensors(path));
  s.checkpoint = path;
  TrainResult r = train_images(*model, trainer, opt, data, s, nullptr);
  CHECK(r.status == TrainStatus::finished);
  return state_of(*model, trainer);
}

}  // namespace

TEST_CASE("batch order: every epoch is a permutation and epochs differ") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const int64_t n = 50;
  BatchOrder order(n, seed);
  std::set<std::vector<int64_t>> epochs;
  for (int64_t e = 0; e < 6; ++e) {
    std::vector<int64_t> perm = batch_of(order, e, n);  // batch e of size n is epoch e
    CHECK(is_permutation_of_range(perm));
    epochs.insert(perm);
  }
  CHECK(epochs.size() == 6);
  // Another seed, another order.
  BatchOrder other(n, seed + 1);
  CHECK(batch_of(other, 0, n) != batch_of(order, 0, n));
  CHECK(error_of([] { BatchOrder none(0, 1); }).find("no training examples") != std::string::npos);
}

TEST_CASE("batch order: a batch is a function of seed and step and straddles epochs right") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const int64_t n = 20, B = 7;
  BatchOrder epochs(n, seed);
  std::vector<int64_t> stream;  // the endless stream: epoch 0, epoch 1, ...
  for (int64_t e = 0; e < 5; ++e) {
    std::vector<int64_t> perm = batch_of(epochs, e, n);
    stream.insert(stream.end(), perm.begin(), perm.end());
  }
  // Steps in a scrambled order on a fresh object: no hidden state.
  BatchOrder order(n, seed);
  for (int64_t step : {9, 2, 0, 5, 2, 10, 1}) {
    INFO("step " << step);
    std::vector<int64_t> got = batch_of(order, step, B);
    std::vector<int64_t> want(stream.begin() + step * B, stream.begin() + (step + 1) * B);
    CHECK(got == want);
  }
  // Step 2 holds positions 14..20: the last six of epoch 0 and the first of epoch 1.
  std::vector<int64_t> straddling = batch_of(order, 2, B);
  CHECK(straddling.back() == stream[20]);
  CHECK(order.epoch(2, B) == doctest::Approx(14.0 / 20.0));
  // A batch larger than the data set wraps through several epochs.
  std::vector<int64_t> big = batch_of(order, 1, 45);
  CHECK(std::equal(big.begin(), big.end(), stream.begin() + 45));
}

TEST_CASE("resuming from a checkpoint is bitwise the same as training straight through (radam and adam)") {
  for (const std::string optimizer : {"radam", "adam"}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " optimizer " << optimizer);
    TempDir dir;
    const ImageDataset data = tiny_dataset(seed);
    const int64_t k = 12;  // batch 6 of 40: steps straddle epochs; radam rectifies from step 6
    const TrainOptions opt = cosine_options(optimizer, k);
    TrainLoopSettings s;
    s.batch = 6;
    s.steps = k;
    s.checkpoint_every = 0;
    const TrainedState straight = train_straight(data, opt, s, seed);

    // First half, checkpointed at its end.
    const std::string path = dir.file("half.safetensors");
    ImageModel model(tiny_model_config(), Device::cpu);
    model.core().init_parameters(seed);
    Trainer trainer(model.core().params(), opt);
    TrainLoopSettings half = s;
    half.steps = k / 2;
    half.checkpoint = path;
    TrainResult r = train_images(model, trainer, opt, data, half, nullptr);
    CHECK(r.status == TrainStatus::finished);
    CHECK(load_safetensors(path).meta_int("lt.train.step") == k / 2);
    CHECK(load_safetensors(path).meta("lt.train.optimizer") == optimizer);

    const TrainedState resumed = resume_from(path, data, opt, s);
    check_same(resumed, straight);
    // The schedule mattered: a constant rate ends elsewhere.
    TrainOptions constant = opt;
    constant.schedule.kind = ScheduleKind::constant;
    CHECK_FALSE(bitwise_equal(train_straight(data, constant, s, seed).values, straight.values));
  }
}

TEST_CASE("the stop flag checkpoints the current step and the checkpoint resumes") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  TempDir dir;
  const ImageDataset data = tiny_dataset(seed);
  const TrainOptions opt = cosine_options("radam", 10);
  TrainLoopSettings s;
  s.batch = 6;
  s.steps = 10;
  s.checkpoint_every = 4;
  const TrainedState straight = train_straight(data, opt, s, seed);

  s.checkpoint = dir.file("stopped.safetensors");
  ImageModel model(tiny_model_config(), Device::cpu);
  model.core().init_parameters(seed);
  Trainer trainer(model.core().params(), opt);
  std::atomic<bool> stop{false};
  std::vector<int64_t> checkpoints;
  auto on_event = [&](const TrainEvent& e) {
    if (e.kind == TrainEvent::step && e.step_index == 3) stop = true;  // as Ctrl-C after update 3
    if (e.kind == TrainEvent::checkpoint) checkpoints.push_back(e.step_index);
  };
  TrainResult r = train_images(model, trainer, opt, data, s, on_event, &stop);
  CHECK(r.status == TrainStatus::interrupted);
  CHECK(r.step == 3);
  CHECK(trainer.step() == 3);
  CHECK(checkpoints == std::vector<int64_t>{3});
  CHECK(load_safetensors(s.checkpoint).meta_int("lt.train.step") == 3);
  check_same(resume_from(s.checkpoint, data, opt, s), straight);
}

TEST_CASE("a non-finite loss stops before updating and leaves the last good checkpoint byte for byte") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  TempDir dir;
  const ImageDataset data = tiny_dataset(seed);
  const TrainOptions opt = cosine_options("adam", 12);
  TrainLoopSettings s;
  s.batch = 6;
  s.steps = 12;
  s.checkpoint_every = 3;
  s.checkpoint = dir.file("run.safetensors");
  ImageModel model(tiny_model_config(), Device::cpu);
  model.core().init_parameters(seed);
  Trainer trainer(model.core().params(), opt);
  std::vector<uint8_t> last_good;
  std::vector<float> values_at_poison;
  auto on_event = [&](const TrainEvent& e) {
    if (e.kind == TrainEvent::checkpoint && e.step_index == 6) {
      last_good = read_bytes(s.checkpoint);
      // One NaN in the final LayerNorm's gain poisons every prediction.
      Tensor g = model.core().params().value("transformer.norm.weight");
      std::vector<float> v = g.to_vector();
      v[1] = std::numeric_limits<float>::quiet_NaN();
      g.copy_from(Tensor::from_vector(v, g.shape()));
      values_at_poison = floats(model.core().params().values());
    }
  };
  TrainResult r = train_images(model, trainer, opt, data, s, on_event);
  CHECK(r.status == TrainStatus::diverged);
  CHECK(r.step == 6);
  CHECK(trainer.step() == 6);
  INFO("message: " << r.message);
  CHECK(r.message.find("NaN") != std::string::npos);
  CHECK(r.message.find("step 7") != std::string::npos);
  CHECK(r.message.find(s.checkpoint) != std::string::npos);
  REQUIRE(!last_good.empty());
  CHECK(read_bytes(s.checkpoint) == last_good);
  // Not updated: the parameters are bitwise those of the poisoned step (the
  // same NaN bits included) and no gradient was taken.
  CHECK(bitwise_equal(floats(model.core().params().values()), values_at_poison));
  for (float g : floats(model.core().params().grads())) REQUIRE(g == 0.f);
}

TEST_CASE("Trainer::restore errors name the checkpoint file") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  TempDir dir;
  ImageModel model(tiny_model_config(), Device::cpu);
  model.core().init_parameters(seed);
  Trainer radam(model.core().params(), cosine_options("radam", 10));

  // Trained with radam, restored into adam.
  const std::string with_radam = dir.file("radam.safetensors");
  save_training_checkpoint(with_radam, model.core(), radam, model.core().metadata());
  Trainer adam(model.core().params(), cosine_options("adam", 10));
  std::string err = error_of([&] { adam.restore(load_safetensors(with_radam)); });
  CHECK(err.find(with_radam) != std::string::npos);
  CHECK(err.find("radam") != std::string::npos);
  CHECK(err.find("adam") != std::string::npos);

  // A model-only checkpoint (lt-train --export): no optimizer at all.
  const std::string model_only = dir.file("exported.safetensors");
  model.core().save(model_only);
  err = error_of([&] { radam.restore(load_safetensors(model_only)); });
  CHECK(err.find(model_only) != std::string::npos);
  CHECK(err.find("lt.train.optimizer") != std::string::npos);

  // The metadata without the moment tensors.
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta = model.core().metadata();
  radam.save_state(tensors, meta);
  const std::string no_moments = dir.file("no-moments.safetensors");
  model.core().save(no_moments, meta);
  err = error_of([&] { radam.restore(load_safetensors(no_moments)); });
  CHECK(err.find(no_moments) != std::string::npos);
  CHECK(err.find("optimizer.exp_avg") != std::string::npos);

  // Moments of a model of another size.
  ImageModelConfig bigger = tiny_model_config();
  bigger.transformer.ff_dim = 32;
  ImageModel other(bigger, Device::cpu);
  Trainer other_trainer(other.core().params(), cosine_options("radam", 10));
  const std::string other_size = dir.file("other-size.safetensors");
  save_training_checkpoint(other_size, other.core(), other_trainer, other.core().metadata());
  err = error_of([&] { radam.restore(load_safetensors(other_size)); });
  CHECK(err.find(other_size) != std::string::npos);
  CHECK(err.find("optimizer.exp_avg") != std::string::npos);
}

TEST_CASE("training on several CPU threads splits each batch over replicas: the full-batch gradient, reproducibly") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const ImageDataset data = tiny_dataset(seed);
  // RAdam's first steps are momentum SGD: the update is proportional to the gradient.
  TrainOptions opt = cosine_options("radam", 4);
  TrainLoopSettings s;
  s.batch = 7;  // uneven shares: 3 and 4 images on two threads
  s.steps = 1;
  s.checkpoint_every = 0;
  // Without dropout the replicas' weighted gradients are the batch's own.
  auto one_step = [&](int threads, float dropout) {
    set_num_threads(threads);
    ImageModelConfig c = tiny_model_config();
    c.transformer.dropout = dropout;
    ImageModel model(c, Device::cpu);
    model.core().init_parameters(seed);
    opt.clip = 0;  // compare the raw update
    Trainer trainer(model.core().params(), opt);
    train_images(model, trainer, opt, data, s, nullptr);
    std::vector<float> v = floats(model.core().params().values());
    set_num_threads(0);
    return v;
  };
  ImageModel init(tiny_model_config(), Device::cpu);
  init.core().init_parameters(seed);
  const std::vector<float> before = floats(init.core().params().values());
  const std::vector<float> single = one_step(1, 0.f), split = one_step(2, 0.f);
  std::vector<float> d1(before.size()), d2(before.size());
  for (size_t i = 0; i < before.size(); ++i) d1[i] = single[i] - before[i], d2[i] = split[i] - before[i];
  CHECK(rel_error(d2, to_double(Tensor::from_vector(d1, {int64_t(d1.size())}))) < 1e-4);
  // With dropout the masks follow the rows: the split changes only rounding.
  const std::vector<float> dropped = one_step(1, 0.1f), dropped_split = one_step(2, 0.1f);
  for (size_t i = 0; i < before.size(); ++i) d1[i] = dropped[i] - before[i], d2[i] = dropped_split[i] - before[i];
  CHECK(rel_error(d2, to_double(Tensor::from_vector(d1, {int64_t(d1.size())}))) < 1e-4);
  CHECK(bitwise_equal(one_step(2, 0.1f), dropped_split));
}

namespace {
// A tiny image model with dropout, a batch of B random images for it and
// training options with a random mask seed.
struct SplitCase {
  ImageModel model;
  SequenceBatch batch;
  ForwardOptions options;
  SplitCase(Rng& rng, uint64_t seed, int64_t B, float dropout) : model(with_dropout(dropout), Device::cpu) {
    model.core().init_parameters(seed);
    std::vector<int32_t> px(B * model.config().subpixels());
    for (auto& x : px) x = int32_t(rng.integer(0, 255));
    batch = model.batch(px, B);
    options.train = true;
    options.seed = uint64_t(rng.integer(0, 1 << 30));
  }
  static ImageModelConfig with_dropout(float p) {
    ImageModelConfig c = tiny_model_config();
    c.transformer.dropout = p;
    return c;
  }
};
}  // namespace

TEST_CASE("a batch split over threads or micro-batches gives the whole batch's gradient, dropout masks included") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 7;
  SplitCase t(rng, seed, B, 0.3f);
  ImageModel& model = t.model;
  const SequenceBatch& batch = t.batch;
  const ForwardOptions& o = t.options;
  auto gradient = [&](int threads, int64_t micro, uint64_t mask_seed) {
    set_num_threads(threads);
    model.core().params().zero_grad();
    ReplicaSet replicas(model.core(), B, micro);
    ForwardOptions step = o;
    step.seed = mask_seed;
    const double loss = replicas.forward_backward(batch, step).loss;
    set_num_threads(0);
    return std::make_pair(loss, floats(model.core().params().grads()));
  };
  const auto whole = gradient(1, 0, o.seed);
  const Tensor reference = Tensor::from_vector(whole.second, {int64_t(whole.second.size())});
  for (auto [threads, micro] : {std::pair{2, 0}, {1, 3}, {2, 2}, {1, 1}}) {
    INFO("threads " << threads << ", micro-batch " << micro);
    const auto split = gradient(threads, micro, o.seed);
    CHECK(std::abs(split.first - whole.first) < 1e-6 * std::abs(whole.first));
    CHECK(rel_error(split.second, to_double(reference)) < 1e-5);
  }
  // The same split gives the same bits; other masks another gradient.
  CHECK(bitwise_equal(gradient(2, 3, o.seed).second, gradient(2, 3, o.seed).second));
  CHECK(rel_error(gradient(1, 0, o.seed + 1).second, to_double(reference)) > 1e-2);
}

TEST_CASE("a step that runs out of memory halves its passes until they fit, with the gradient of the split asked for") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 8;
  SplitCase t(rng, seed, B, 0.2f);
  ImageModel& model = t.model;
  const SequenceBatch& batch = t.batch;
  const ForwardOptions& o = t.options;
  set_num_threads(1);
  // What a step holds at its peak in passes of `micro` rows (buffers planned afresh).
  auto peak = [&](int64_t micro) {
    model.core().release_buffers();
    model.core().params().zero_grad();
    memory_reset_peak(Device::cpu);
    ReplicaSet replicas(model.core(), B, micro);
    replicas.forward_backward(batch, o);
    return memory_peak(Device::cpu);
  };
  const size_t two = peak(2), four = peak(4);
  REQUIRE(four > two);
  auto gradient = [&](int64_t micro, size_t limit, int64_t* found) {
    model.core().release_buffers();
    model.core().params().zero_grad();
    set_memory_limit(Device::cpu, limit);
    ReplicaSet replicas(model.core(), B, micro);
    const double loss = replicas.forward_backward(batch, o).loss;
    *found = replicas.micro_batch();
    set_memory_limit(Device::cpu, 0);
    return std::make_pair(loss, floats(model.core().params().grads()));
  };
  int64_t found = 0;
  const auto asked = gradient(2, 0, &found);
  CHECK(found == 2);
  // A limit between the two peaks: 8 rows, then 4, run out; passes of 2 fit.
  const auto fitted = gradient(0, (two + four) / 2, &found);
  CHECK(found == 2);
  CHECK(fitted.first == asked.first);
  CHECK(bitwise_equal(fitted.second, asked.second));
  // A limit below what one row needs: one line.
  model.core().release_buffers();
  model.core().params().zero_grad();
  set_memory_limit(Device::cpu, memory_in_use(Device::cpu) + 1024);
  ReplicaSet replicas(model.core(), B);
  CHECK_THROWS_WITH_AS(replicas.forward_backward(batch, o), doctest::Contains("one row of the batch does not fit"),
                       OutOfMemory);
  set_memory_limit(Device::cpu, 0);
  set_num_threads(0);
}

TEST_CASE("evaluation split over replicas gives the whole batch's mean loss") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  set_num_threads(2);
  ImageModel model(tiny_model_config(), Device::cpu);
  model.core().init_parameters(seed);
  const int64_t B = 7, S = model.config().subpixels();
  std::vector<int32_t> px(B * S);
  for (auto& x : px) x = int32_t(rng.integer(0, 255));
  Tensor images = Tensor::from_vector(px, {B, S});
  ReplicaSet replicas(model.core(), B);
  CHECK(replicas.replicas() == 2);
  const double split = replicas.forward(model.batch(px, B), {}).loss, whole = model.core().forward(model.batch(images), pass(false, 0));
  CHECK(std::abs(split - whole) < 1e-6 * std::abs(whole));
  // A bad byte in the second replica's share is an error, not the end of the process.
  CHECK_THROWS_WITH(replicas.forward(bad_tokens(model, px, B), {}), doctest::Contains("outside 0..255"));
  set_num_threads(0);
}
