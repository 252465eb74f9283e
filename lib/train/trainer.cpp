// Trainer: per-parameter clipping, the optimizer step at the scheduled rate,
// and the optimizer's share of a checkpoint.
#include "train/trainer.h"

#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "common/random.h"

namespace lt {

Trainer::Trainer(Parameters& params, const TrainOptions& options)
    : params_(params), options_(options), optimizer_(make_optimizer(options.optimizer, params.numel(), params.device())) {
  check(params.allocated(), "Trainer needs allocated parameters");
  // Parameters are 16-float aligned in the flat buffer: a segment is each
  // tensor plus its padding (zero gradient), so the norms are the tensors' own.
  for (size_t i = 0; i < params.size(); ++i) {
    int64_t begin = params.value(i).data() - params.values().data();
    int64_t end = i + 1 < params.size() ? params.value(i + 1).data() - params.values().data()
                                        : params.numel();
    segments_.push_back(end - begin);
  }
}

float Trainer::update() {
  Tensor grads = params_.grads();
  if (options_.clip > 0) clip_grad_norm_segments(grads, segments_, options_.clip);
  float lr = learning_rate(options_.schedule, step()) * lr_scale_;
  Tensor values = params_.values();
  optimizer_->step(values, grads, lr);
  params_.zero_grad();
  return lr;
}

bool Trainer::report_evaluation(double loss) {
  if (options_.plateau_patience <= 0) return false;
  if (loss < best_eval_) {
    best_eval_ = loss;
    evals_without_gain_ = 0;
    return false;
  }
  if (++evals_without_gain_ < options_.plateau_patience) return false;
  lr_scale_ *= options_.plateau_factor;
  evals_without_gain_ = 0;
  return true;
}

uint64_t Trainer::dropout_seed() const { return splitmix64(splitmix64(options_.seed) ^ uint64_t(step())); }

void Trainer::save_state(std::map<std::string, Tensor>& tensors, std::map<std::string, std::string>& metadata) const {
  for (const auto& [name, t] : optimizer_->state()) tensors["optimizer." + name] = t;
  metadata["lt.train.step"] = std::to_string(step());
  metadata["lt.train.optimizer"] = optimizer_->name();
  metadata["lt.train.seed"] = std::to_string(options_.seed);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", seconds_);
  metadata["lt.train.seconds"] = seconds;
  if (options_.plateau_patience > 0) {
    // Round-trip digits: a resumed run compares against exactly these numbers.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", double(lr_scale_));
    metadata["lt.train.lr_scale"] = buf;
    std::snprintf(buf, sizeof buf, "%.17g", best_eval_);
    metadata["lt.train.best_eval"] = buf;
    metadata["lt.train.evals_without_gain"] = std::to_string(evals_without_gain_);
  }
}

void Trainer::restore(const Checkpoint& ck) {
  check(ck.metadata.count("lt.train.optimizer") != 0,
        ck.path + ": has no optimizer state (no metadata lt.train.optimizer): a model-only checkpoint, as "
                  "lt-train --export writes, cannot resume training");
  const std::string opt = ck.meta("lt.train.optimizer");
  check(opt == optimizer_->name(), ck.path + ": was trained with optimizer " + opt + ", not " + optimizer_->name());
  for (auto& [name, t] : optimizer_->state()) {
    Tensor dst = t;
    dst.copy_from(ck.get("optimizer." + name, {params_.numel()}));
  }
  optimizer_->set_step_count(ck.meta_int("lt.train.step"));
  if (ck.metadata.count("lt.train.seconds")) {  // absent in checkpoints older than it
    seconds_ = ck.meta_double("lt.train.seconds");
    check(seconds_ >= 0 && std::isfinite(seconds_), ck.path + ": metadata lt.train.seconds out of range");
  }
  if (ck.metadata.count("lt.train.lr_scale")) {
    lr_scale_ = float(ck.meta_double("lt.train.lr_scale"));
    best_eval_ = ck.meta("lt.train.best_eval") == "inf" ? HUGE_VAL : ck.meta_double("lt.train.best_eval");
    evals_without_gain_ = ck.meta_int("lt.train.evals_without_gain");
    check(lr_scale_ > 0 && lr_scale_ <= 1 && evals_without_gain_ >= 0,
          ck.path + ": metadata lt.train.lr_scale / evals_without_gain out of range");
  }
}

BatchOrder::BatchOrder(int64_t n, uint64_t seed) : n_(n), seed_(seed) { check(n > 0, "no training examples"); }

const std::vector<int64_t>& BatchOrder::permutation(int64_t epoch) {
  if (epoch != cached_epoch_) {
    perm_.resize(n_);
    for (int64_t i = 0; i < n_; ++i) perm_[i] = i;
    // Fisher-Yates with a counter-based generator: the same on every platform.
    uint64_t key = splitmix64(splitmix64(seed_ + 0x9E3779B97F4A7C15ull) + uint64_t(epoch));
    for (int64_t i = n_ - 1; i > 0; --i) {
      uint64_t r = splitmix64(key + uint64_t(i));
      std::swap(perm_[i], perm_[int64_t(r % uint64_t(i + 1))]);
    }
    cached_epoch_ = epoch;
  }
  return perm_;
}

void BatchOrder::batch(int64_t step, int64_t batch_size, std::vector<int64_t>& indices) {
  indices.resize(batch_size);
  for (int64_t j = 0; j < batch_size; ++j) {
    int64_t pos = step * batch_size + j;
    indices[j] = permutation(pos / n_)[pos % n_];
  }
}

}  // namespace lt
