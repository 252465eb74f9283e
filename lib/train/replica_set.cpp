// ReplicaSet: data parallelism over CPU threads for one training step.
#include <omp.h>

#include <cmath>
#include <exception>

#include "backend/cpu_blas.h"
#include "lt/backend.h"
#include "lt/error.h"
#include "lt/training_loop.h"

namespace lt {

ReplicaSet::ReplicaSet(SequenceModel& model, int64_t batch) : model_(model) {
  const int64_t n = model.device() == Device::cpu ? std::min<int64_t>(num_threads(), batch) : 1;
  for (int64_t r = 1; r < n; ++r) {
    auto m = std::make_unique<SequenceModel>(model.config(), Device::cpu);
    m->params().share_values(model.params());
    extra_.push_back(std::move(m));
  }
}

ReplicaSet::~ReplicaSet() = default;

namespace {
// The positions the loss counts in rows begin..end-1 (SequenceModel::forward's
// rule): a CTC batch counts its labels.
int64_t counted(const SequenceBatch& b, int64_t begin, int64_t end) {
  if (b.labels.rows() > 0) return b.labels.offsets[end] - b.labels.offsets[begin];
  int64_t n = 0;
  for (int64_t r = begin; r < end; ++r)
    n += !b.first.empty() ? b.last[r] - b.first[r] : !b.lengths.empty() ? b.lengths[r] : b.length;
  return n;
}

// Replica r's rows of a batch of B split n ways.
int64_t split(int64_t B, int64_t r, int64_t n) { return B * r / n; }

// Replica r's share of the batch's counted positions.
double share(const SequenceBatch& b, int64_t r, int64_t n) {
  return double(counted(b, split(b.rows, r, n), split(b.rows, r + 1, n))) / double(counted(b, 0, b.rows));
}
}  // namespace

// Runs pass(model, its share of the batch, r) on every replica in parallel and
// weights the scores by the shares' counted positions. An error in any replica
// (a bad token, say) is rethrown here: one escaping an OpenMP region would end
// the process.
template <class Pass>
std::vector<BatchScore> ReplicaSet::run(const SequenceBatch& batch, Pass&& pass) {
  const int64_t n = replicas();
  std::vector<BatchScore> score(n);
  std::vector<std::exception_ptr> error(n);
  for (auto& m : extra_) m->copy_feature_maps(model_);  // the draws the model has now (they may be redrawn)
  {
    cpu::SingleThreadedBlas single;
#pragma omp parallel for schedule(static, 1) num_threads(int(n))
    for (int64_t r = 0; r < n; ++r) {
      try {
        const SequenceBatch part = batch.slice(split(batch.rows, r, n), split(batch.rows, r + 1, n));
        score[r] = pass(r == 0 ? model_ : *extra_[r - 1], part, r);
      } catch (...) {
        error[r] = std::current_exception();
      }
    }
  }
  for (const std::exception_ptr& e : error)
    if (e) std::rethrow_exception(e);
  return score;
}

BatchScore ReplicaSet::forward(const SequenceBatch& batch, const ForwardOptions& options, bool accuracy) {
  BatchScore s;
  if (replicas() == 1 || batch.rows < replicas()) {
    s.loss = model_.forward(batch, options, nullptr, accuracy ? &s.accuracy : nullptr);
    return s;
  }
  std::vector<BatchScore> part = run(batch, [&](SequenceModel& m, const SequenceBatch& b, int64_t) {
    BatchScore p;
    p.loss = m.forward(b, options, nullptr, accuracy ? &p.accuracy : nullptr);
    return p;
  });
  const int64_t n = replicas();
  for (int64_t r = 0; r < n; ++r) {
    const double w = share(batch, r, n);
    s.loss += part[r].loss * w;
    s.accuracy += part[r].accuracy * w;
  }
  return s;
}

BatchScore ReplicaSet::forward_backward(const SequenceBatch& batch, const ForwardOptions& options, bool accuracy) {
  const int64_t n = replicas();
  check(batch.rows >= n, "a training batch needs at least one row per replica");
  BatchScore s;
  if (n == 1) {
    s.loss = model_.forward(batch, options, nullptr, accuracy ? &s.accuracy : nullptr);
    if (std::isfinite(s.loss)) model_.backward();
    return s;
  }
  std::vector<BatchScore> part = run(batch, [&](SequenceModel& m, const SequenceBatch& b, int64_t r) {
    if (r > 0) m.params().zero_grad();
    ForwardOptions o = options;
    o.seed = options.seed ^ (0xD1B54A32D192ED03ull * uint64_t(r));
    BatchScore p;
    p.loss = m.forward(b, o, nullptr, accuracy ? &p.accuracy : nullptr);
    if (std::isfinite(p.loss)) m.backward();
    return p;
  });
  // The batch mean: replica r's mean weighted by its share of the counted positions.
  float* g = model_.params().grads().data();
  const int64_t numel = model_.params().grads().numel();
  std::vector<float> w(n);
  std::vector<const float*> grads(n, g);
  for (int64_t r = 0; r < n; ++r) {
    const double wr = share(batch, r, n);
    w[r] = float(wr);
    s.loss += part[r].loss * wr;
    s.accuracy += part[r].accuracy * wr;
    if (r > 0) grads[r] = extra_[r - 1]->params().grads().data();
  }
  if (!std::isfinite(s.loss)) return s;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < numel; ++i) {
    float sum = w[0] * g[i];
    for (int64_t r = 1; r < n; ++r) sum += w[r] * grads[r][i];
    g[i] = sum;
  }
  return s;
}

}  // namespace lt
