// FeatureInput's step (forward_at, a pool's rows each at its own position):
// the codes it keeps are position_code's bits, asked for by several threads
// at once, again and again, inside and past the positions it keeps, and a
// row's result is the row's alone.
#include <cstring>
#include <thread>

#include "model/input_part.h"
#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("feature input: forward_at on threads at once equals forward at each row's position, bit for bit") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t features = rng.integer(3, 9), d = 4 * rng.integer(2, 12), rows = 37;  // the code's width d / 2 is even
  Parameters params;
  std::unique_ptr<InputPart> input = make_feature_input(params, features, d);
  params.allocate(Device::cpu);
  std::mt19937_64 gen(seed);
  input->init_parameters(gen);
  input->prepare_step(true);
  // Per thread: rounds of rows at positions drawn near 0 (they recur), near
  // the end of what is kept (4096) and far past it.
  constexpr int kThreads = std::min(4, kStepSlots);
  std::vector<std::vector<int64_t>> positions(kThreads);
  std::vector<std::vector<float>> frames(kThreads), got(kThreads);
  constexpr int kRounds = 6;
  for (int t = 0; t < kThreads; ++t) {
    for (int64_t i = 0; i < kRounds * rows; ++i) {
      const double u = rng.uniform(0, 1);
      positions[size_t(t)].push_back(u < 0.6 ? rng.integer(0, 40) : u < 0.85 ? rng.integer(4080, 4110) : rng.integer(5000, 90000));
    }
    frames[size_t(t)] = rng.normals(kRounds * rows * features);
    got[size_t(t)].resize(size_t(kRounds * rows * d));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Tensor in = Tensor::wrap(frames[size_t(t)].data() + r * rows * features, {rows, features}, Device::cpu);
        Tensor x = Tensor::wrap(got[size_t(t)].data() + r * rows * d, {rows, 1, d}, Device::cpu);
        input->forward_at(in, positions[size_t(t)].data() + r * rows, x, t);
      }
    });
  for (std::thread& th : threads) th.join();
  // The code half against position_code itself, the projection half against
  // the row stepped alone (forward_at's products give a row the same bits at
  // any batch; forward's may differ from them).
  Tensor code = Tensor::empty({1, d / 2}), alone = Tensor::empty({1, 1, d});
  for (int t = 0; t < kThreads; ++t)
    for (int64_t i = 0; i < kRounds * rows; ++i) {
      const int64_t p = positions[size_t(t)][size_t(i)];
      INFO("thread " << t << ", row " << i << ", position " << p);
      const float* row = got[size_t(t)].data() + i * d;
      position_code(p, code);
      REQUIRE(std::memcmp(code.data(), row + d / 2, size_t(d / 2) * sizeof(float)) == 0);
      Tensor frame = Tensor::wrap(frames[size_t(t)].data() + i * features, {1, features}, Device::cpu);
      input->forward_at(frame, &p, alone, 0);
      REQUIRE(std::memcmp(alone.data(), row, size_t(d) * sizeof(float)) == 0);
    }
}
