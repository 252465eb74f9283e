// ReplicaSet: data parallelism over CPU threads for one training step.
#include <omp.h>

#include <cmath>
#include <exception>

#include "backend/cpu_blas.h"
#include "lt/backend.h"
#include "lt/error.h"
#include "lt/image_training.h"

namespace lt {

ReplicaSet::ReplicaSet(ImageModel& model, int64_t batch) : model_(model) {
  const int64_t n = model.device() == Device::cpu ? std::min<int64_t>(num_threads(), batch) : 1;
  for (int64_t r = 1; r < n; ++r) {
    auto m = std::make_unique<ImageModel>(model.config(), Device::cpu);
    m->params().share_values(model.params());
    extra_.push_back(std::move(m));
  }
}

ReplicaSet::~ReplicaSet() = default;

// Runs pass(model, images of its share, r) on every replica in parallel;
// returns the replicas' losses. An error in any replica (bad image bytes, say)
// is rethrown here: one escaping an OpenMP region would end the process.
template <class Pass>
std::vector<double> ReplicaSet::run(const Tensor& images, Pass&& pass) {
  const int64_t n = replicas(), B = images.dim(0);
  std::vector<double> loss(n);
  std::vector<std::exception_ptr> error(n);
  {
    cpu::SingleThreadedBlas single;
#pragma omp parallel for schedule(static, 1) num_threads(int(n))
    for (int64_t r = 0; r < n; ++r) {
      try {
        loss[r] = pass(r == 0 ? model_ : *extra_[r - 1], images.rows(B * r / n, B * (r + 1) / n), r);
      } catch (...) {
        error[r] = std::current_exception();
      }
    }
  }
  for (const std::exception_ptr& e : error)
    if (e) std::rethrow_exception(e);
  return loss;
}

double ReplicaSet::share(int64_t r, int64_t B) const {
  const int64_t n = replicas();
  return double(B * (r + 1) / n - B * r / n) / double(B);
}

double ReplicaSet::forward(const Tensor& images) {
  if (replicas() == 1 || images.dim(0) < replicas()) return model_.forward(images, false, 0);
  std::vector<double> loss = run(images, [](ImageModel& m, const Tensor& part, int64_t) {
    return m.forward(part, false, 0);
  });
  double total = 0;
  for (int64_t r = 0; r < replicas(); ++r) total += loss[r] * share(r, images.dim(0));
  return total;
}

double ReplicaSet::forward_backward(const Tensor& images, uint64_t seed) {
  const int64_t n = replicas(), B = images.dim(0);
  check(B >= n, "a training batch needs at least one image per replica");
  if (n == 1) {
    double loss = model_.forward(images, true, seed);
    if (std::isfinite(loss)) model_.backward();
    return loss;
  }
  std::vector<double> loss = run(images, [seed](ImageModel& m, const Tensor& part, int64_t r) {
    if (r > 0) m.params().zero_grad();
    double l = m.forward(part, true, seed ^ (0xD1B54A32D192ED03ull * uint64_t(r)));
    if (std::isfinite(l)) m.backward();
    return l;
  });
  // The batch mean: replica r's mean weighted by its share of the images.
  double total = 0;
  float* g = model_.params().grads().data();
  const int64_t numel = model_.params().grads().numel();
  std::vector<float> w(n);
  std::vector<const float*> grads(n, g);
  for (int64_t r = 0; r < n; ++r) {
    w[r] = float(share(r, B));
    total += loss[r] * share(r, B);
    if (r > 0) grads[r] = extra_[r - 1]->params().grads().data();
  }
  if (!std::isfinite(total)) return total;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < numel; ++i) {
    float sum = w[0] * g[i];
    for (int64_t r = 1; r < n; ++r) sum += w[r] * grads[r][i];
    g[i] = sum;
  }
  return total;
}

}  // namespace lt
