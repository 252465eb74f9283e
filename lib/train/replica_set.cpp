// ReplicaSet: data parallelism over CPU threads for one training step.
#include <omp.h>

#include <cmath>

#include "backend/cpu_blas.h"
#include "lt/backend.h"
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

double ReplicaSet::forward_backward(const Tensor& images, uint64_t seed) {
  const int64_t n = replicas(), B = images.dim(0);
  if (n == 1) {
    double loss = model_.forward(images, true, seed);
    if (std::isfinite(loss)) model_.backward();
    return loss;
  }
  std::vector<double> loss(n);
  {
    cpu::SingleThreadedBlas single;
#pragma omp parallel for schedule(static, 1) num_threads(int(n))
    for (int64_t r = 0; r < n; ++r) {
      ImageModel& m = r == 0 ? model_ : *extra_[r - 1];
      if (r > 0) m.params().zero_grad();
      loss[r] = m.forward(images.rows(B * r / n, B * (r + 1) / n), true, seed ^ (0xD1B54A32D192ED03ull * uint64_t(r)));
      if (std::isfinite(loss[r])) m.backward();
    }
  }
  // The batch mean: replica r's mean weighted by its share of the images.
  double total = 0;
  float* g = model_.params().grads().data();
  const int64_t numel = model_.params().grads().numel();
  std::vector<float> share(n);
  std::vector<const float*> grads(n, g);
  for (int64_t r = 0; r < n; ++r) {
    share[r] = float(B * (r + 1) / n - B * r / n) / float(B);
    total += loss[r] * share[r];
    if (r > 0) grads[r] = extra_[r - 1]->params().grads().data();
  }
  if (!std::isfinite(total)) return total;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < numel; ++i) {
    float sum = share[0] * g[i];
    for (int64_t r = 1; r < n; ++r) sum += share[r] * grads[r][i];
    g[i] = sum;
  }
  return total;
}

}  // namespace lt
