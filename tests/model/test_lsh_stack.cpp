// A transformer stack of Reformer LSH attention: no key projection, padded
// batches against each sequence alone, rotations that follow the pass's
// seed, copy-model checkpoints that keep the LSH settings, and a recurrent
// form that is refused in one line.
#include <cstring>
#include <vector>

#include "io/safetensors.h"
#include "io/temp_dir.h"
#include "model/sequence_model.h"
#include "model/transformer.h"
#include "test_util.h"
#include "train/copy_task.h"

using namespace lt;
using namespace lt::test;

namespace {

TransformerConfig lsh_config(int64_t rounds, Direction direction) {
  TransformerConfig c{2, 2, 4, 8, 16, AttentionKind::lsh, direction, "elu", 0.f};
  c.lsh_rounds = rounds;
  c.lsh_buckets = 4;
  c.lsh_chunk = 3;
  return c;
}

struct Stack {
  Parameters params;
  std::unique_ptr<TransformerStack> stack;
  Stack(const TransformerConfig& c, uint64_t seed) {
    stack = std::make_unique<TransformerStack>(c, params);
    params.allocate(Device::cpu);
    stack->init_parameters(seed);
    pass = stack->new_pass();
  }
  std::unique_ptr<EncoderPass> pass;  // what a forward leaves for its backward
};

// Rows 0..n-1 of sequence b of x [B, L, d] as [1, n, d].
Tensor sequence(const Tensor& x, int64_t b, int64_t n) {
  const int64_t L = x.dim(1), d = x.dim(2);
  Tensor out = Tensor::empty({1, n, d});
  out.reshape({n, d}).copy_from(x.reshape({x.dim(0) * L, d}).rows(b * L, b * L + n));
  return out;
}

}  // namespace

TEST_CASE("an LSH stack has no key projection and counts its parameters so") {
  Stack s(lsh_config(4, Direction::causal), 1);
  int64_t values = 0;
  for (size_t i = 0; i < s.params.size(); ++i) {
    CHECK(s.params.name(i).find("key_projection") == std::string::npos);
    values += shape_numel(s.params.shape(i));
  }
  CHECK(values == s.stack->config().parameter_count());
  CHECK(attention_name(s.stack->config()) == "lsh-4");
}

TEST_CASE("an LSH stack on a padded batch equals each sequence alone, in both directions") {
  for (int64_t rounds : {1, 4})
    for (Direction direction : {Direction::causal, Direction::bidirectional}) {
      const uint64_t seed = fresh_seed();
      INFO("seed " << seed << " rounds " << rounds << " " << direction_name(direction));
      Rng rng(seed);
      Stack s(lsh_config(rounds, direction), seed);
      const int64_t B = 3, L = 11, d = 8;
      const std::vector<int32_t> lengths{int32_t(rng.integer(1, L - 1)), int32_t(L), int32_t(rng.integer(1, L - 1))};
      Tensor x = rng.randn({B, L, d}), y = Tensor::empty({B, L, d}), dy = rng.randn({B, L, d});
      Tensor dx = Tensor::empty({B, L, d});
      const ForwardOptions same = pass(false, seed);  // the same rotations for every call
      s.params.zero_grad();
      s.stack->forward(x, Tensor::from_vector(lengths, {B}), y, same, *s.pass);
      s.stack->backward(*s.pass, dy, dx);
      const std::vector<float> batch_grads = s.params.grads().to_vector();
      s.params.zero_grad();
      for (int64_t b = 0; b < B; ++b) {
        const int64_t n = lengths[b];
        Tensor yb = Tensor::empty({1, n, d}), dxb = Tensor::empty({1, n, d});
        s.stack->forward(sequence(x, b, n), Tensor(), yb, same, *s.pass);
        s.stack->backward(*s.pass, sequence(dy, b, n), dxb);
        CHECK(rel_error(sequence(y, b, n), yb) < 1e-5);
        CHECK(rel_error(sequence(dx, b, n), dxb) < 1e-5);
        const std::vector<float> padded_y = sequence(y, b, L).to_vector(), padded_dx = sequence(dx, b, L).to_vector();
        for (int64_t i = n * d; i < L * d; ++i) {
          REQUIRE(padded_y[i] == 0.f);
          REQUIRE(padded_dx[i] == 0.f);
        }
      }
      CHECK(rel_error(batch_grads, to_double(s.params.grads())) < 1e-5);
    }
}

TEST_CASE("an LSH stack draws its rotations from the pass's seed") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TransformerConfig c = lsh_config(1, Direction::causal);
  c.lsh_buckets = 16;  // 64 positions in chunks of 3: 16 buckets
  Stack s(c, seed);
  Tensor x = rng.randn({2, 64, 8}), y1 = Tensor::empty({2, 64, 8}), y2 = Tensor::empty({2, 64, 8});
  s.stack->forward(x, Tensor(), y1, pass(true, 77), *s.pass);
  s.stack->forward(x, Tensor(), y2, pass(true, 77), *s.pass);
  CHECK(y1.to_vector() == y2.to_vector());
  s.stack->forward(x, Tensor(), y2, pass(true, 78), *s.pass);
  CHECK(rel_error(y2, y1) > 1e-4);
}

TEST_CASE("an LSH stack refuses the recurrent form in one line") {
  Stack s(lsh_config(1, Direction::causal), 2);
  CHECK_THROWS_WITH_AS(s.stack->new_state(1, 4), doctest::Contains("LSH attention (Reformer) has no recurrent form"),
                       Error);
  CHECK_THROWS_WITH_AS(s.stack->prepare_step(Products::fp32), doctest::Contains("no recurrent form"), Error);
}

TEST_CASE("attention names: lsh-N and causal-lsh-N parse, others are refused") {
  TransformerConfig c;
  c.set_attention("lsh-4");
  CHECK(c.attention == AttentionKind::lsh);
  CHECK(c.lsh_rounds == 4);
  c.set_attention("causal-lsh-1");
  CHECK(c.lsh_rounds == 1);
  CHECK(attention_name(c) == "lsh-1");
  for (const char* bad : {"lsh", "lsh-0", "lsh-65", "lsh-x", "lsh-4x", "causal-lsh-"})
    CHECK_THROWS_WITH_AS(c.set_attention(bad), doctest::Contains("lsh-N"), Error);
  c.lsh_buckets = 5;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("LSH buckets"), Error);
}

TEST_CASE("a copy model with LSH attention round-trips through its checkpoint") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  TempDir dir;
  CopyTaskConfig c;
  c.sequence_length = 12;
  c.symbols = 6;
  c.transformer = lsh_config(4, Direction::causal);
  c.transformer.lsh_buckets = 8;
  SequenceModel model(c.sequence_config(), Device::cpu);
  model.init_parameters(seed);
  const std::string path = dir.file("copy-lsh.safetensors");
  model.save(path);
  const Checkpoint ck = load_safetensors(path);
  CHECK(ck.meta("attention") == "lsh-4");
  CHECK(ck.meta_int("lsh_buckets") == 8);
  CHECK(ck.meta_int("lsh_chunk") == 3);
  CHECK_FALSE(ck.has("transformer.layers.0.attention.key_projection.weight"));

  auto loaded = load_copy_model(path, Device::cpu);
  const TransformerConfig& t = loaded->config().transformer;
  CHECK(t.attention == AttentionKind::lsh);
  CHECK(t.lsh_rounds == 4);
  CHECK(t.lsh_buckets == 8);
  CHECK(t.lsh_chunk == 3);
  const std::vector<float> a = model.params().values().to_vector(), b = loaded->params().values().to_vector();
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  SequenceBatch batch;
  make_copy_batch(c, seed, 0, 4, batch);
  CHECK(model.forward(batch, pass(false, 5)) == loaded->forward(batch, pass(false, 5)));
}
