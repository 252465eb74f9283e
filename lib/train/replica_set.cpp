// ReplicaSet: data parallelism over ranks and CPU threads for one training step.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "backend/cpu_blas.h"
#include "backend/device.h"
#include "common/error.h"
#include "train/training_loop.h"
#include "train/world.h"

namespace lt {

namespace {
// Part r's first row of B rows split n ways.
int64_t split(int64_t B, int64_t r, int64_t n) { return B * r / n; }

// The largest share of `rows` split n ways.
int64_t largest_share(int64_t rows, int64_t n) { return (rows + n - 1) / n; }
}  // namespace

ReplicaSet::ReplicaSet(SequenceModel& model, int64_t batch, int64_t micro_batch)
    : model_(model), micro_batch_(micro_batch) {
  check(micro_batch >= 0, "micro-batch must be >= 0, got " + std::to_string(micro_batch));
  int64_t rows = largest_share(batch, World::get().size());
  if (micro_batch > 0) rows = std::min(rows, micro_batch);
  const int64_t n = model.device() == Device::cpu ? std::min<int64_t>(num_threads(), rows) : 1;
  for (int64_t r = 1; r < n; ++r) {
    auto m = std::make_unique<SequenceModel>(model.config(), Device::cpu);
    m->params().share_values(model.params());
    extra_.push_back(std::move(m));
  }
  passes_.resize(size_t(n));
}

ReplicaSet::~ReplicaSet() = default;

// Runs rows [begin, end) on the replicas in parallel, each part's scores
// weighted by its counted positions over normalizer. An error in any replica
// (a bad token, say) is rethrown here: one escaping an OpenMP region would
// end the process.
BatchScore ReplicaSet::run(const SequenceBatch& batch, int64_t begin, int64_t end, int64_t normalizer,
                           const ForwardOptions& options, bool accuracy, bool backward) {
  const int64_t n = std::min(replicas(), end - begin);
  std::vector<BatchScore> score(static_cast<size_t>(n));
  std::vector<std::exception_ptr> error(static_cast<size_t>(n));
  auto pass = [&](int64_t r) {
    const int64_t first = begin + split(end - begin, r, n), last = begin + split(end - begin, r + 1, n);
    SequenceModel& m = r == 0 ? model_ : *extra_[size_t(r - 1)];
    if (backward && r > 0) m.params().zero_grad();
    ForwardOptions o = options;
    o.first_row = options.first_row + first;
    const SequenceBatch part = first == 0 && last == batch.rows ? SequenceBatch() : batch.slice(first, last);
    const SequenceBatch& b = first == 0 && last == batch.rows ? batch : part;
    double acc = 0;
    ForwardPass& fp = passes_[size_t(r)];
    const double loss = m.forward(b, o, fp, nullptr, accuracy ? &acc : nullptr);
    if (backward && std::isfinite(loss)) m.backward(fp, normalizer);
    const double w = double(fp.counted()) / double(normalizer);
    score[size_t(r)] = {loss * w, acc * w};
  };
  if (n == 1) {
    pass(0);
  } else {
    for (int64_t r = 1; r < n; ++r) extra_[size_t(r - 1)]->copy_feature_maps(model_);  // draws may have changed
    cpu::SingleThreadedBlas single;
#pragma omp parallel for schedule(static, 1) num_threads(int(n))
    for (int64_t r = 0; r < n; ++r) {
      try {
        pass(r);
      } catch (...) {
        error[size_t(r)] = std::current_exception();
      }
    }
    for (const std::exception_ptr& e : error)
      if (e) std::rethrow_exception(e);
  }
  BatchScore s;
  for (const BatchScore& p : score) s.loss += p.loss, s.accuracy += p.accuracy;
  if (backward && n > 1 && std::isfinite(s.loss)) {
    float* g = model_.params().grads().data();
    const int64_t numel = model_.params().grads().numel();
    std::vector<const float*> grads(size_t(n - 1));
    for (int64_t r = 1; r < n; ++r) grads[size_t(r - 1)] = extra_[size_t(r - 1)]->params().grads().data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < numel; ++i) {
      float sum = g[i];
      for (const float* gr : grads) sum += gr[i];
      g[i] = sum;
    }
  }
  return s;
}

BatchScore ReplicaSet::passes(const SequenceBatch& batch, int64_t begin, int64_t end, int64_t normalizer,
                              const ForwardOptions& options, bool accuracy, bool backward) {
  for (;;) {
    const int64_t micro = micro_batch_ > 0 ? micro_batch_ : std::max<int64_t>(1, end - begin);
    try {
      BatchScore sum;
      for (int64_t m = begin; m < end; m += micro) {
        const BatchScore s = run(batch, m, std::min(end, m + micro), normalizer, options, accuracy, backward);
        sum.loss += s.loss, sum.accuracy += s.accuracy;
      }
      return sum;
    } catch (const OutOfMemory& e) {
      if (micro <= 1)
        throw OutOfMemory(std::string("one row of the batch does not fit: ") + e.what());
      // Every pass again, in halves: the gradients of those that ran go too.
      micro_batch_ = (micro + 1) / 2;
      if (backward) model_.params().zero_grad();
      model_.release_buffers();
      for (auto& m : extra_) m->release_buffers();
      for (ForwardPass& p : passes_) p = ForwardPass();
    }
  }
}

BatchScore ReplicaSet::forward_backward(const SequenceBatch& batch, const ForwardOptions& options, bool accuracy) {
  World& world = World::get();
  check(batch.rows >= world.size(), "a training batch of " + std::to_string(batch.rows) +
                                        " rows needs at least one row per rank (" + std::to_string(world.size()) +
                                        " ranks)");
  const int64_t normalizer = model_.counted(batch);
  check(normalizer > 0, "a batch that counts no positions");
  const int64_t begin = split(batch.rows, world.rank(), world.size());
  const int64_t end = split(batch.rows, world.rank() + 1, world.size());
  const BatchScore s = passes(batch, begin, end, normalizer, options, accuracy, true);
  double score[2] = {s.loss, s.accuracy};
  world.sum(score, 2);
  if (std::isfinite(score[0])) {
    Tensor grads = model_.params().grads();
    world.sum(grads);
  }
  return {score[0], score[1]};
}

BatchScore ReplicaSet::forward(const SequenceBatch& batch, const ForwardOptions& options, bool accuracy) {
  World& world = World::get();
  const int64_t normalizer = model_.counted(batch);
  check(normalizer > 0, "a batch that counts no positions");
  const int64_t begin = split(batch.rows, world.rank(), world.size());
  const int64_t end = split(batch.rows, world.rank() + 1, world.size());
  const BatchScore s = passes(batch, begin, end, normalizer, options, accuracy, false);
  double score[2] = {s.loss, s.accuracy};
  world.sum(score, 2);
  return {score[0], score[1]};
}

}  // namespace lt
