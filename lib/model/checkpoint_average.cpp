#include <cstring>

#include "model/parameters.h"

namespace lt {

namespace {

bool is_optimizer(const std::string& name) { return name.rfind("optimizer.", 0) == 0; }

bool same_values(const Tensor& a, const Tensor& b) {
  // Checkpoint tensors are float32 on the CPU; bits compared, so -0 and NaN count too.
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// Throws unless ck holds the model `first` holds (see the header).
void check_same_model(const Parameters& params, const Checkpoint& first, const Checkpoint& ck,
                      const std::map<std::string, std::string>& architecture) {
  const std::string differs = ": not the model of " + first.path + " (";
  for (const auto& [key, value] : architecture) {
    if (key == "dropout") continue;
    const std::string theirs = ck.meta(key, "");
    check(theirs == value, ck.path + differs + key + " is '" + theirs + "', not '" + value + "')");
  }
  for (size_t i = 0; i < params.size(); ++i) ck.get(params.name(i), params.shape(i));  // names the shape
  for (const auto& [name, t] : first.tensors) {
    if (params.has(name) || is_optimizer(name)) continue;
    check(ck.has(name), ck.path + differs + "it lacks tensor '" + name + "')");
    check(same_values(t, ck.tensors.at(name)), ck.path + differs + "tensor '" + name + "' differs)");
  }
  for (const auto& [name, t] : ck.tensors)
    check(params.has(name) || is_optimizer(name) || first.has(name),
          ck.path + differs + "which has no tensor '" + name + "')");
}

}  // namespace

void average_checkpoints(Parameters& params, const Checkpoint& first, const std::vector<Checkpoint>& others,
                         const std::map<std::string, std::string>& architecture) {
  for (const Checkpoint& ck : others) check_same_model(params, first, ck, architecture);
  const double n = double(others.size() + 1);
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<float> own = params.value(i).to_vector();
    std::vector<double> sum(own.begin(), own.end());
    for (const Checkpoint& ck : others) {
      const float* v = ck.get(params.name(i), params.shape(i)).data();  // a checkpoint's tensors are on the CPU
      for (size_t k = 0; k < sum.size(); ++k) sum[k] += v[k];
    }
    std::vector<float> mean(sum.size());
    for (size_t k = 0; k < sum.size(); ++k) mean[k] = float(sum[k] / n);
    params.value(i).copy_from(Tensor::from_vector(mean, params.shape(i)));
  }
}

}  // namespace lt
