// Token sequences stepped through a StatePool, each starting at its own
// tick, skipping random ticks and sometimes starting afresh; and each
// stepped alone at batch 1: what the CPU's and the GPU's pool tests share.
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/sequence_model.h"
#include "model/state_pool.h"
#include "test_util.h"

namespace lt::test {

constexpr int64_t kPooledVocabulary = 11;

// A token model of the copy task's shape (a categorical head over 11), its parameters not yet set.
// head_dim 32: the speech model's heads, whose step has a fixed-width loop.
inline std::unique_ptr<SequenceModel> pooled_token_model(Device device, int64_t ff_conv,
                                                         const std::string& feature_map = "elu", int64_t head_dim = 8) {
  SequenceModelConfig c;
  c.family = "copy";
  c.vocabulary = kPooledVocabulary;
  c.max_positions = 40;
  c.transformer = TransformerConfig{2, 2, head_dim, 2 * head_dim, 4 * head_dim, AttentionKind::linear, Direction::causal,
                                    feature_map, 0.f};
  c.transformer.ff_conv = ff_conv;
  c.head.kind = HeadKind::categorical;
  c.head.classes = kPooledVocabulary;
  return std::make_unique<SequenceModel>(c, device);
}

struct PooledSequence {
  std::vector<int32_t> tokens;
  std::vector<int64_t> resets;  // positions after which it starts afresh
  int64_t start_tick = 0, row = -1, done = 0;
  std::vector<float> heads;  // from the pool, [done, V]
};

inline std::vector<PooledSequence> random_sequences(Rng& rng, int64_t n) {
  std::vector<PooledSequence> seqs(static_cast<size_t>(n));
  for (PooledSequence& s : seqs) {
    const int64_t len = rng.integer(1, 40);
    for (int64_t i = 0; i < len; ++i) s.tokens.push_back(int32_t(rng.integer(0, kPooledVocabulary - 1)));
    if (len > 4 && rng.uniform(0, 1) < 0.3) s.resets.push_back(rng.integer(1, len - 2));
    s.start_tick = rng.integer(0, 30);
  }
  return seqs;
}

// Every sequence through the pool: a row from its start tick, inputs on
// about 70% of the ticks after (one to three positions, a run of its row,
// cut at a reset), rows in a random order, a reset where it starts afresh,
// the row given back at its end. Returns the steps taken.
inline int64_t step_in_pool(StatePool& pool, std::vector<PooledSequence>& seqs, Rng& rng) {
  const int64_t V = kPooledVocabulary;
  int64_t steps = 0;
  for (int64_t tick = 0;; ++tick) {
    std::vector<std::pair<PooledSequence*, int64_t>> stepping;  // and its positions this step
    bool left = false;
    for (PooledSequence& s : seqs) {
      if (s.done == int64_t(s.tokens.size())) continue;
      left = true;
      if (tick < s.start_tick) continue;
      if (s.row < 0) s.row = pool.acquire();
      if (rng.uniform(0, 1) < 0.3) continue;  // no input this tick
      int64_t take = std::min<int64_t>(rng.integer(1, 3), int64_t(s.tokens.size()) - s.done);
      for (int64_t r : s.resets)
        if (r > s.done) take = std::min(take, r - s.done);
      stepping.emplace_back(&s, take);
    }
    if (!left) return steps;
    if (stepping.empty()) continue;
    std::shuffle(stepping.begin(), stepping.end(), rng.gen);
    std::vector<int64_t> rows;
    std::vector<int32_t> tokens;
    for (auto [s, take] : stepping)
      for (int64_t j = 0; j < take; ++j) {
        rows.push_back(s->row);
        tokens.push_back(s->tokens[size_t(s->done + j)]);
      }
    Tensor heads = Tensor::empty({int64_t(rows.size()), V});  // on the CPU, whatever the model's device
    pool.step(rows, Tensor::from_vector(tokens, {int64_t(tokens.size())}), heads);
    ++steps;
    const std::vector<float> h = heads.to_vector();
    int64_t i = 0;
    for (auto [s, take] : stepping) {
      s->heads.insert(s->heads.end(), h.begin() + i * V, h.begin() + (i + take) * V);
      i += take;
      s->done += take;
      if (std::count(s->resets.begin(), s->resets.end(), s->done)) pool.reset(s->row);
      if (s->done == int64_t(s->tokens.size())) {
        pool.release(s->row);
        s->row = -1;
      }
    }
  }
}

// s's heads stepped alone at batch 1 on a CPU model (prepared for the
// step), starting afresh at its resets.
inline std::vector<float> heads_alone(SequenceModel& model, const PooledSequence& s, DType state) {
  RecurrentState st = model.new_state(1, state);
  Tensor token = Tensor::empty({1}, Device::cpu, DType::i32), head = Tensor::empty({1, kPooledVocabulary});
  std::vector<float> alone;
  for (size_t t = 0; t < s.tokens.size(); ++t) {
    token.data_i32()[0] = s.tokens[t];
    model.step(st, token, head);
    const std::vector<float> h = head.to_vector();
    alone.insert(alone.end(), h.begin(), h.end());
    if (std::count(s.resets.begin(), s.resets.end(), int64_t(t + 1))) st.reset();
  }
  return alone;
}

}  // namespace lt::test
