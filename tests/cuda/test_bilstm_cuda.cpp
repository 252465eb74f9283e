// The Bi-LSTM speech model (the paper's Table 3 baseline) on the GPU against
// the CPU: a padded batch's CTC loss and every gradient, with dropout on
// (CPU and CUDA draw the same masks).
#include <algorithm>
#include <cmath>

#include "model/speech_batch.h"
#include "speech/speech_model.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
constexpr Device kGpu = Device::cuda;

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}
}  // namespace

TEST_CASE("cuda bilstm speech model loss and gradients match the CPU on a padded batch, dropout on") {
  if (!cuda_or_skip()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t F = rng.integer(3, 12), classes = 6, B = rng.integer(2, 5), L = rng.integer(8, 30);
  const SequenceModelConfig config = speech_model_config(LstmConfig{2, rng.integer(3, 40), 0.2f}, F, classes, 64);
  SequenceModel cpu(config, Device::cpu), gpu(config, kGpu);
  cpu.init_parameters(seed);
  Tensor values = gpu.params().values();  // a view: copying into it sets the GPU parameters
  values.copy_from(cpu.params().values());
  const SequenceBatch batch = random_speech_batch(rng, B, L, F, classes);
  const ForwardOptions train = pass(true, seed ^ 0x5bd1e995ull);
  cpu.params().zero_grad();
  gpu.params().zero_grad();
  ForwardPass fc, fg;
  const double loss_cpu = cpu.forward(batch, train, fc), loss_gpu = gpu.forward(batch, train, fg);
  CHECK(std::abs(loss_gpu - loss_cpu) < 1e-4 * std::abs(loss_cpu));
  cpu.backward(fc);
  gpu.backward(fg);
  const double floor = 1e-3 * norm(cpu.params().grads().to_vector());
  for (size_t p = 0; p < cpu.params().size(); ++p) {
    INFO("parameter " << cpu.params().name(p));
    const std::vector<float> g = gpu.params().grad(p).to_vector(), want = cpu.params().grad(p).to_vector();
    std::vector<float> diff(g.size());
    for (size_t i = 0; i < g.size(); ++i) diff[i] = g[i] - want[i];
    CHECK(norm(diff) < 1e-3 * std::max(norm(want), floor));
  }
}
