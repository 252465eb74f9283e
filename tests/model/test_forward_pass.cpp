// The forward context as a value (lt::ForwardPass, lt::EncoderPass): what a
// forward leaves for its backward is the caller's, so whatever runs between
// them (a prediction, a forward of other data into another pass, a loss-only
// forward, a chunk of the recurrent form) changes nothing: the gradients are
// those of the forward and backward alone, bit for bit.
#include <tuple>

#include "model/sequence_model.h"
#include "model/speech_batch.h"
#include "speech/speech_model.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// A token model of random sizes: categorical targets at every position of rows of random lengths.
SequenceModelConfig token_config(Rng& rng, AttentionKind kind, Direction direction, int64_t ff_conv) {
  SequenceModelConfig c;
  c.family = "test";
  c.vocabulary = rng.integer(3, 9);
  c.max_positions = 16;
  const int64_t heads = rng.integer(1, 2), head_dim = 4 * rng.integer(1, 2);
  c.transformer = TransformerConfig{rng.integer(1, 3), heads, head_dim, heads * head_dim, 16, kind, direction,
                                    "elu", 0.2f};  // dropout on: the masks follow the pass's seed
  c.transformer.ff_conv = ff_conv;
  c.transformer.lsh_rounds = 2;
  c.transformer.lsh_buckets = 4;
  c.transformer.lsh_chunk = 3;
  c.head.kind = HeadKind::categorical;
  c.head.classes = c.vocabulary;
  return c;
}

SequenceBatch token_batch(Rng& rng, const SequenceModelConfig& c, int64_t rows, int64_t length) {
  SequenceBatch b;
  b.rows = rows, b.length = length;
  for (int64_t i = 0; i < rows * length; ++i) {
    b.inputs.push_back(int32_t(rng.integer(0, c.vocabulary - 1)));
    b.targets.push_back(int32_t(rng.integer(0, c.vocabulary - 1)));
  }
  for (int64_t r = 0; r < rows; ++r) b.lengths.push_back(r == 0 ? int32_t(length) : int32_t(rng.integer(1, length)));
  return b;
}

std::vector<float> gradients(SequenceModel& model) { return model.params().grads().to_vector(); }

// Forward and backward of a alone, then with everything else between them;
// the other batch b's own pass, filled in between, gives b's gradients too.
void check_passes_are_independent(SequenceModel& model, const SequenceBatch& a, const SequenceBatch& b, uint64_t seed) {
  ForwardOptions train, other;
  train.train = other.train = true;
  train.seed = seed;
  other.seed = seed + 1;
  model.params().zero_grad();
  ForwardPass alone;
  const double loss = model.forward(a, train, alone);
  model.backward(alone);
  const std::vector<float> want = gradients(model);
  model.params().zero_grad();
  ForwardPass alone_b;
  model.forward(b, other, alone_b);
  model.backward(alone_b);
  const std::vector<float> want_b = gradients(model);

  model.params().zero_grad();
  ForwardPass pass, pass_b;
  CHECK(model.forward(a, train, pass) == loss);
  model.predict(b, other);                  // the model's own buffers
  model.forward(b, other, pass_b);          // another pass, of other data and shape
  model.forward(b, ForwardOptions{});       // a loss alone
  if (model.config().runs_as_rnn()) {       // the recurrent form's chunk
    const Tensor inputs = Tensor::from_vector(b.inputs, {b.rows, b.length});
    RecurrentState state = model.new_state(b.rows);
    Tensor head = Tensor::empty({b.rows, model.config().head.width()});
    model.prefill(inputs, state, head);
  }
  model.backward(pass);
  CHECK(gradients(model) == want);  // bit for bit
  model.params().zero_grad();
  model.backward(pass_b);
  CHECK(gradients(model) == want_b);
  // A pass is read, not used up: its backward again gives the same.
  model.params().zero_grad();
  model.backward(pass);
  CHECK(gradients(model) == want);
}

}  // namespace

TEST_CASE("a predict or another forward between a forward and its backward changes nothing, bit for bit") {
  for (auto [kind, direction, conv] : {std::tuple{AttentionKind::linear, Direction::causal, 0},
                                       {AttentionKind::linear, Direction::bidirectional, 3},
                                       {AttentionKind::softmax, Direction::causal, 2},
                                       {AttentionKind::lsh, Direction::causal, 0}}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << attention_name(kind, direction) << ", feed-forward convolution " << conv);
    Rng rng(seed);
    SequenceModel model(token_config(rng, kind, direction, conv), Device::cpu);
    model.init_parameters(seed);
    const SequenceBatch a = token_batch(rng, model.config(), rng.integer(1, 4), rng.integer(2, 16));
    SequenceBatch b = token_batch(rng, model.config(), rng.integer(1, 4), rng.integer(2, 16));
    if (model.config().runs_as_rnn()) b.lengths.clear();  // prefilled as whole rows too
    check_passes_are_independent(model, a, b, seed);
  }
}

TEST_CASE("a bilstm's and a CTC model's passes are independent too") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t F = rng.integer(2, 6), classes = 5;
  for (const SequenceModelConfig& c :
       {speech_model_config(LstmConfig{2, rng.integer(2, 8), 0.2f}, F, classes, 32),
        speech_model_config(TransformerConfig{2, 2, 4, 8, 16, AttentionKind::linear, Direction::bidirectional, "elu", 0.2f},
                            F, classes, 32)}) {
    INFO(c.describe_encoder());
    SequenceModel model(c, Device::cpu);
    model.init_parameters(seed);
    check_passes_are_independent(model, random_speech_batch(rng, rng.integer(1, 4), rng.integer(8, 20), F, classes),
                                 random_speech_batch(rng, rng.integer(1, 4), rng.integer(8, 20), F, classes), seed);
  }
}

TEST_CASE("a pass is its model's: another model's backward refuses it, its forward plans it anew") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const SequenceModelConfig c = token_config(rng, AttentionKind::linear, Direction::causal, 0);
  SequenceModel one(c, Device::cpu), two(c, Device::cpu);
  one.init_parameters(seed);
  two.init_parameters(seed);
  const SequenceBatch a = token_batch(rng, c, 2, 6);
  ForwardPass pass;
  CHECK_THROWS_WITH(one.backward(pass), doctest::Contains("no forward of this model filled"));
  one.forward(a, ForwardOptions{}, pass);
  CHECK_THROWS_WITH(two.backward(pass), doctest::Contains("no forward of this model filled"));
  two.params().zero_grad();
  two.forward(a, ForwardOptions{}, pass);
  two.backward(pass);
  one.params().zero_grad();
  ForwardPass own;
  one.forward(a, ForwardOptions{}, own);
  one.backward(own);
  CHECK(gradients(two) == gradients(one));  // the same weights
}
