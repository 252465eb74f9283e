// StatePool: rows stepped together, each at its own position, against each
// sequence stepped alone (the same bits) and against the parallel model.
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "backend/device.h"
#include "io/temp_dir.h"
#include "model/pooled_sequences.h"
#include "model/state_pool.h"
#include "speech/random_speech_model.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

std::unique_ptr<SequenceModel> token_model(uint64_t seed, int64_t ff_conv, const std::string& feature_map = "elu",
                                           int64_t head_dim = 8) {
  auto m = pooled_token_model(Device::cpu, ff_conv, feature_map, head_dim);
  m->init_parameters(seed);
  return m;
}

}  // namespace

TEST_CASE("a state pool steps rows at their own positions, several in a step too, exactly as each sequence stepped alone") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  int64_t conv = 0, head_dim = 8;
  std::string phi = "elu";
  Precision precision;
  SUBCASE("fp32") {}
  SUBCASE("heads of 32, the speech model's, which step through a fixed-width loop") { head_dim = 32; }
  SUBCASE("with a feed-forward convolution") { conv = 3; }
  SUBCASE("FAVOR+ features, whose step takes a pass of its own") { phi = "favor"; }
  SUBCASE("bf16 products and state") {
    if (!cpu_has_bf16()) return;
    precision.products = Products::bf16;
    precision.state = DType::bf16;
  }
  auto model = token_model(seed, conv, phi, head_dim);
  std::vector<PooledSequence> seqs = random_sequences(rng, 24);
  StatePool pool(*model, precision, 2);  // grows while the test runs
  step_in_pool(pool, seqs, rng);
  CHECK(pool.live() == 0);
  CHECK(pool.capacity() >= 4);
  // Each alone: batch 1 through SequenceModel::step, starting afresh at its resets.
  model->prepare_step(precision);
  for (const PooledSequence& s : seqs) {
    const std::vector<float> alone = heads_alone(*model, s, precision.state);
    REQUIRE(alone.size() == s.heads.size());
    CHECK(std::memcmp(alone.data(), s.heads.data(), alone.size() * sizeof(float)) == 0);
  }
  // And the parallel model on a sequence without resets, an independent form.
  for (const PooledSequence& s : seqs) {
    if (!s.resets.empty() || s.tokens.size() < 2 || precision.products == Products::bf16) continue;
    const int64_t L = int64_t(s.tokens.size());
    SequenceBatch b;
    b.rows = 1;
    b.length = L;
    b.inputs = s.tokens;
    Tensor want = model->predict(b, pass(false, 0));
    CHECK(rel_error(s.heads, to_double(want)) < 1e-4);
    break;
  }
}

TEST_CASE("a state pool continues a row over a chunk as the sequence alone, then steps it on") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  auto model = token_model(seed, 2);
  const int64_t V = 11, T = rng.integer(2, 20);
  std::vector<int32_t> prefix(static_cast<size_t>(T));
  for (int32_t& x : prefix) x = int32_t(rng.integer(0, V - 1));
  StatePool pool(*model, Precision{}, 1);
  const int64_t other = pool.acquire(), row = pool.acquire();  // row lives in a grown pool
  Tensor heads = Tensor::empty({1, T, V});
  pool.continue_chunk(row, Tensor::from_vector(prefix, {1, T}), heads);
  CHECK(pool.position(row) == T);
  CHECK(pool.position(other) == 0);
  Tensor next = Tensor::empty({1, V});
  pool.step({row}, Tensor::from_vector(std::vector<int32_t>{3}, {1}), next);

  RecurrentState st = model->new_state(1);
  Tensor want = Tensor::empty({1, T, V}), want_next = Tensor::empty({1, V});
  model->continue_chunk(st, Tensor::from_vector(prefix, {1, T}), want);
  model->step(st, Tensor::from_vector(std::vector<int32_t>{3}, {1}), want_next);
  CHECK(heads.to_vector() == want.to_vector());
  CHECK(next.to_vector() == want_next.to_vector());
}

TEST_CASE("a state pool refuses rows not in use, models without a fixed-size state, and positions past the model") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  auto model = token_model(seed, 0);
  StatePool pool(*model, Precision{}, 2);
  const int64_t a = pool.acquire();
  Tensor heads = Tensor::empty({1, 11});
  const std::string msg = error_of([&] { pool.step({a + 1}, Tensor::from_vector(std::vector<int32_t>{1}, {1}), heads); });
  CHECK(msg.find("not in use") != std::string::npos);
  // A row's positions in one step follow one another: one row in two runs is refused, nothing stepped.
  const int64_t b = pool.acquire();
  Tensor three = Tensor::empty({3, 11});
  CHECK(error_of([&] { pool.step({a, b, a}, Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3}), three); })
            .find("row " + std::to_string(a) + "'s entries do not follow one another") != std::string::npos);
  CHECK(pool.position(a) == 0);
  pool.step({a, a, b}, Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3}), three);
  CHECK(pool.position(a) == 2);
  CHECK(pool.position(b) == 1);
  pool.release(b);
  pool.release(a);
  CHECK(error_of([&] { pool.release(a); }).find("not in use") != std::string::npos);

  SequenceModelConfig c = model->config();
  c.transformer.attention = AttentionKind::softmax;
  SequenceModel softmax(c, Device::cpu);
  softmax.init_parameters(seed);
  CHECK(error_of([&] { StatePool p(softmax, Precision{}); }).find("causal linear") != std::string::npos);

  // A token row past the model's positions is refused in one line.
  const int64_t r = pool.acquire();
  std::vector<int32_t> prefix(40, 1);
  Tensor chunk = Tensor::empty({1, 40, 11});
  pool.continue_chunk(r, Tensor::from_vector(prefix, {1, 40}), chunk);
  CHECK(error_of([&] { pool.step({r}, Tensor::from_vector(std::vector<int32_t>{1}, {1}), heads); })
            .find("outside the model") != std::string::npos);
}
