// StatePool: rows stepped together, each at its own position, against each
// sequence stepped alone (the same bits) and against the parallel model.
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "backend/device.h"
#include "io/temp_dir.h"
#include "model/state_pool.h"
#include "speech/random_speech_model.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// A token model (categorical head over V) of the copy task's shape.
std::unique_ptr<SequenceModel> token_model(uint64_t seed, int64_t ff_conv, const std::string& feature_map = "elu") {
  SequenceModelConfig c;
  c.family = "copy";
  c.vocabulary = 11;
  c.max_positions = 40;
  c.transformer = TransformerConfig{2, 2, 8, 16, 32, AttentionKind::linear, Direction::causal, feature_map, 0.f};
  c.transformer.ff_conv = ff_conv;
  c.head.kind = HeadKind::categorical;
  c.head.classes = 11;
  auto m = std::make_unique<SequenceModel>(c, Device::cpu);
  m->init_parameters(seed);
  return m;
}

struct Sequence {
  std::vector<int32_t> tokens;
  std::vector<int64_t> resets;  // positions after which it starts afresh
  int64_t start_tick = 0;
  int64_t row = -1, done = 0;
  std::vector<float> heads;  // pooled, [done, V]
};

}  // namespace

TEST_CASE("a state pool steps rows at their own positions exactly as each sequence stepped alone") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  int64_t conv = 0;
  std::string phi = "elu";
  Precision precision;
  SUBCASE("fp32") {}
  SUBCASE("with a feed-forward convolution") { conv = 3; }
  SUBCASE("FAVOR+ features, whose step takes a pass of its own") { phi = "favor"; }
  SUBCASE("bf16 products and state") {
    if (!cpu_has_bf16()) return;
    precision.products = Products::bf16;
    precision.state = DType::bf16;
  }
  auto model = token_model(seed, conv, phi);
  const int64_t V = 11, N = 24;
  std::vector<Sequence> seqs(N);
  for (Sequence& s : seqs) {
    const int64_t len = rng.integer(1, 40);
    for (int64_t i = 0; i < len; ++i) s.tokens.push_back(int32_t(rng.integer(0, V - 1)));
    if (len > 4 && rng.uniform(0, 1) < 0.3) s.resets.push_back(rng.integer(1, len - 2));
    s.start_tick = rng.integer(0, 30);
  }
  StatePool pool(*model, precision, 2);  // grows while the test runs
  for (int64_t tick = 0;; ++tick) {
    std::vector<int64_t> rows;
    std::vector<int32_t> tokens;
    std::vector<Sequence*> stepping;
    bool left = false;
    for (Sequence& s : seqs) {
      if (s.done == int64_t(s.tokens.size())) continue;
      left = true;
      if (tick < s.start_tick) continue;
      if (s.row < 0) s.row = pool.acquire();
      if (rng.uniform(0, 1) < 0.3) continue;  // this one has no input this tick
      stepping.push_back(&s);
    }
    if (!left) break;
    std::shuffle(stepping.begin(), stepping.end(), rng.gen);  // rows in any order
    for (Sequence* s : stepping) {
      rows.push_back(s->row);
      tokens.push_back(s->tokens[size_t(s->done)]);
    }
    if (rows.empty()) continue;
    Tensor heads = Tensor::empty({int64_t(rows.size()), V});
    pool.step(rows, Tensor::from_vector(tokens, {int64_t(tokens.size())}), heads);
    const std::vector<float> h = heads.to_vector();
    for (size_t i = 0; i < stepping.size(); ++i) {
      Sequence& s = *stepping[i];
      s.heads.insert(s.heads.end(), h.begin() + int64_t(i) * V, h.begin() + int64_t(i + 1) * V);
      ++s.done;
      if (std::count(s.resets.begin(), s.resets.end(), s.done)) pool.reset(s.row);
      if (s.done == int64_t(s.tokens.size())) {
        pool.release(s.row);
        s.row = -1;
      }
    }
  }
  CHECK(pool.live() == 0);
  CHECK(pool.capacity() >= 4);
  // Each alone: batch 1 through SequenceModel::step, starting afresh at its resets.
  model->prepare_step(precision);
  for (const Sequence& s : seqs) {
    RecurrentState st = model->new_state(1, precision.state);
    Tensor token = Tensor::empty({1}, Device::cpu, DType::i32), head = Tensor::empty({1, V});
    std::vector<float> alone;
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      token.data_i32()[0] = s.tokens[t];
      model->step(st, token, head);
      const std::vector<float> h = head.to_vector();
      alone.insert(alone.end(), h.begin(), h.end());
      if (std::count(s.resets.begin(), s.resets.end(), int64_t(t + 1))) st.reset();
    }
    REQUIRE(alone.size() == s.heads.size());
    CHECK(std::memcmp(alone.data(), s.heads.data(), alone.size() * sizeof(float)) == 0);
  }
  // And the parallel model on a sequence without resets, an independent form.
  for (const Sequence& s : seqs) {
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
