// The transformer stack as the sequence-model core uses it: per-sequence
// lengths in both directions against each sequence run alone, buffers that
// are planned once for the largest shape, and a state continued over chunks
// against one pass and against steps.
#include <vector>

#include "backend/device.h"
#include "io/safetensors.h"
#include "io/temp_dir.h"
#include "model/sequence_model.h"
#include "model/transformer.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

struct Stack {
  Parameters params;
  std::unique_ptr<TransformerStack> stack;
  Stack(AttentionKind kind, Direction direction, uint64_t seed, const std::string& phi = "elu", int64_t ff_conv = 0) {
    TransformerConfig c{2, 2, 4, 8, 16, kind, direction, phi, 0.f};
    c.ff_conv = ff_conv;
    stack = std::make_unique<TransformerStack>(c, params);
    params.allocate(Device::cpu);
    stack->init_parameters(seed);
    pass = stack->new_pass();
  }
  std::unique_ptr<EncoderPass> pass;  // what a forward leaves for its backward
};

// Rows first..first+n-1 of sequence b of x [B, L, d] as a [1, n, d] tensor.
Tensor sequence(const Tensor& x, int64_t b, int64_t first, int64_t n) {
  const int64_t L = x.dim(1), d = x.dim(2);
  Tensor out = Tensor::empty({1, n, d});
  out.reshape({n, d}).copy_from(x.reshape({x.dim(0) * L, d}).rows(b * L + first, b * L + first + n));
  return out;
}

}  // namespace

// Linear attention with elu+1 and with FAVOR+ (its own feature width), and
// softmax; with and without a feed-forward convolution.
struct Kind {
  AttentionKind attention;
  const char* phi;
  int64_t ff_conv;
};
const Kind kKinds[] = {{AttentionKind::linear, "elu", 0},
                       {AttentionKind::linear, "favor", 0},
                       {AttentionKind::softmax, "elu", 0},
                       {AttentionKind::linear, "elu", 3},
                       {AttentionKind::softmax, "elu", 5}};

TEST_CASE("a padded batch equals each sequence alone, forward and backward, in both directions") {
  for (Kind kind : kKinds)
    for (Direction direction : {Direction::causal, Direction::bidirectional}) {
      const uint64_t seed = fresh_seed();
      INFO("seed " << seed << " " << attention_name(kind.attention, direction) << " " << kind.phi << " conv "
                   << kind.ff_conv);
      Rng rng(seed);
      Stack s(kind.attention, direction, seed, kind.phi, kind.ff_conv);
      const int64_t B = 3, L = 9, d = 8;
      const std::vector<int32_t> lengths{int32_t(rng.integer(1, L - 1)), int32_t(L), int32_t(rng.integer(1, L - 1))};
      Tensor x = rng.randn({B, L, d}), y = Tensor::empty({B, L, d}), dy = rng.randn({B, L, d});
      Tensor dx = Tensor::empty({B, L, d});
      s.params.zero_grad();
      s.stack->forward(x, Tensor::from_vector(lengths, {B}), y, ForwardOptions{}, *s.pass);
      s.stack->backward(*s.pass, dy, dx);
      const std::vector<float> batch_grads = s.params.grads().to_vector();

      // Each sequence alone, unpadded; the parameter gradients add up.
      s.params.zero_grad();
      const std::vector<float> yv = y.to_vector(), dxv = dx.to_vector();
      for (int64_t b = 0; b < B; ++b) {
        const int64_t n = lengths[b];
        Tensor xb = sequence(x, b, 0, n), yb = Tensor::empty({1, n, d}), dxb = Tensor::empty({1, n, d});
        s.stack->forward(xb, Tensor(), yb, ForwardOptions{}, *s.pass);
        s.stack->backward(*s.pass, sequence(dy, b, 0, n), dxb);
        const std::vector<float> want = yb.to_vector(), dwant = dxb.to_vector();
        std::vector<float> got(yv.begin() + b * L * d, yv.begin() + (b * L + n) * d);
        std::vector<float> dgot(dxv.begin() + b * L * d, dxv.begin() + (b * L + n) * d);
        CHECK(rel_error(got, std::vector<double>(want.begin(), want.end())) < 1e-5);
        CHECK(rel_error(dgot, std::vector<double>(dwant.begin(), dwant.end())) < 1e-5);
        for (int64_t i = (b * L + n) * d; i < (b + 1) * L * d; ++i) {
          REQUIRE(yv[i] == 0.f);   // padded outputs are zeros
          REQUIRE(dxv[i] == 0.f);  // and nothing flows back into padded inputs
        }
      }
      const std::vector<float> alone = s.params.grads().to_vector();
      CHECK(rel_error(batch_grads, std::vector<double>(alone.begin(), alone.end())) < 1e-5);
    }
}

TEST_CASE("training buffers are planned for the largest shape: smaller batches and sequences allocate nothing") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Stack s(AttentionKind::softmax, Direction::bidirectional, seed);
  const int64_t d = 8;
  auto pass = [&](int64_t B, int64_t L, Tensor& x, Tensor& y, Tensor& dx) {
    std::vector<int32_t> lengths(B);
    for (auto& n : lengths) n = int32_t(rng.integer(1, L));
    Tensor xv = x.rows(0, B * L).reshape({B, L, d}), yv = y.rows(0, B * L).reshape({B, L, d});
    Tensor dxv = dx.rows(0, B * L).reshape({B, L, d});
    s.stack->forward(xv, Tensor::from_vector(lengths, {B}), yv, ForwardOptions{}, *s.pass);
    s.stack->backward(*s.pass, yv, dxv);
  };
  Tensor x = rng.randn({6 * 12, d}), y = Tensor::empty({6 * 12, d}), dx = Tensor::empty({6 * 12, d});
  pass(6, 12, x, y, dx);  // the largest
  const size_t before = memory_in_use(Device::cpu);
  memory_reset_peak(Device::cpu);
  for (auto [B, L] : {std::pair<int64_t, int64_t>{3, 12}, {6, 5}, {1, 1}, {5, 11}, {6, 12}}) pass(B, L, x, y, dx);
  // Only the small lengths tensors come and go.
  CHECK(memory_peak(Device::cpu) <= before + 64);
  CHECK(memory_in_use(Device::cpu) == before);
}

TEST_CASE("a state continued over random chunks equals one prefill, stepping and the training pass") {
  for (Kind kind : kKinds) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << attention_name(kind.attention) << " " << kind.phi << " conv " << kind.ff_conv);
    Rng rng(seed);
    // A causal convolution takes even kernels too.
    Stack s(kind.attention, Direction::causal, seed, kind.phi, kind.ff_conv ? kind.ff_conv + 1 : 0);
    const int64_t B = 2, L = 13, d = 8;
    Tensor x = rng.randn({B, L, d});
    // One pass.
    RecurrentState whole = s.stack->new_state(B, L);
    Tensor y_whole = Tensor::empty({B, L, d});
    s.stack->prefill(x, y_whole, whole);
    // The training pass, which keeps no state.
    Tensor y_train = Tensor::empty({B, L, d});
    s.stack->forward(x, Tensor(), y_train, ForwardOptions{}, *s.pass);
    // Random chunks, the first one included in the split.
    RecurrentState chunked = s.stack->new_state(B, L);
    std::vector<float> y_chunks(B * L * d);
    for (int64_t t0 = 0; t0 < L;) {
      const int64_t T = std::min(L - t0, rng.integer(1, 5));
      Tensor xc = Tensor::empty({B, T, d}), yc = Tensor::empty({B, T, d});
      for (int64_t b = 0; b < B; ++b) xc.rows(b, b + 1).copy_from(sequence(x, b, t0, T));
      s.stack->continue_chunk(chunked, xc, yc);
      const std::vector<float> v = yc.to_vector();
      for (int64_t b = 0; b < B; ++b)
        std::copy(v.begin() + b * T * d, v.begin() + (b + 1) * T * d, y_chunks.begin() + (b * L + t0) * d);
      t0 += T;
    }
    // Step by step.
    RecurrentState stepped = s.stack->new_state(B, L);
    std::vector<float> y_steps(B * L * d);
    Tensor xt = Tensor::empty({B, d}), yt = Tensor::empty({B, d});
    for (int64_t t = 0; t < L; ++t) {
      for (int64_t b = 0; b < B; ++b) xt.rows(b, b + 1).copy_from(sequence(x, b, t, 1).reshape({1, d}));
      s.stack->step(stepped, xt, yt);
      const std::vector<float> v = yt.to_vector();
      for (int64_t b = 0; b < B; ++b) std::copy(v.begin() + b * d, v.begin() + (b + 1) * d, y_steps.begin() + (b * L + t) * d);
    }
    const std::vector<double> want = to_double(y_whole);
    CHECK(rel_error(y_train, want) < 1e-5);
    CHECK(rel_error(y_chunks, want) < 1e-5);
    CHECK(rel_error(y_steps, want) < 1e-5);
    CHECK(rel_error(chunked.buffer, whole.buffer) < 1e-5);
    CHECK(rel_error(stepped.buffer, whole.buffer) < 1e-5);
    CHECK((whole.position == L && chunked.position == L && stepped.position == L));
    // Copying each element copies all of its state (S, Z or the caches, and the window).
    RecurrentState copied = s.stack->new_state(B, L);
    for (int64_t b = 0; b < B; ++b) s.stack->copy_state_element(whole, b, copied, B - 1 - b);
    RecurrentState swapped = s.stack->new_state(B, L);
    for (int64_t b = 0; b < B; ++b) s.stack->copy_state_element(copied, b, swapped, B - 1 - b);
    CHECK(swapped.buffer.to_vector() == whole.buffer.to_vector());
    CHECK(swapped.position == L);
    // A fork is its own copy; a reset is the empty prefix.
    RecurrentState fork = whole.fork();
    whole.reset();
    CHECK(fork.buffer.to_vector() == swapped.buffer.to_vector());
    CHECK((fork.position == L && whole.position == 0));
    for (float v : whole.buffer.to_vector()) REQUIRE(v == 0.f);
  }
}

TEST_CASE("a sequence model's padded batch scores each row's real positions as the rows alone do") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SequenceModelConfig c;
  c.family = "test";
  c.vocabulary = 7;
  c.max_positions = 10;
  c.transformer = TransformerConfig{2, 2, 4, 8, 16, AttentionKind::softmax, Direction::bidirectional, "elu", 0.f};
  c.head.kind = HeadKind::categorical;
  c.head.classes = 7;
  SequenceModel model(c, Device::cpu);
  model.init_parameters(seed);
  SequenceBatch batch;
  batch.rows = 3;
  batch.length = 10;
  batch.lengths = {4, 10, int32_t(rng.integer(1, 9))};
  for (int64_t i = 0; i < 30; ++i) {
    batch.inputs.push_back(int32_t(rng.integer(0, 6)));
    batch.targets.push_back(int32_t(rng.integer(0, 6)));
  }
  model.params().zero_grad();
  ForwardPass fp;
  const double loss = model.forward(batch, ForwardOptions{}, fp);
  model.backward(fp);
  const std::vector<float> grads = model.params().grads().to_vector();
  // Row by row, unpadded; the loss is the mean over every real position.
  double total = 0;
  int64_t positions = 0;
  model.params().zero_grad();
  std::vector<float> summed(grads.size(), 0.f);
  for (int64_t r = 0; r < 3; ++r) {
    const int64_t n = batch.lengths[r];
    SequenceBatch one;
    one.rows = 1;
    one.length = n;
    one.inputs.assign(batch.inputs.begin() + r * 10, batch.inputs.begin() + r * 10 + n);
    one.targets.assign(batch.targets.begin() + r * 10, batch.targets.begin() + r * 10 + n);
    total += model.forward(one, ForwardOptions{}, fp) * double(n);
    positions += n;
    model.params().zero_grad();
    model.backward(fp);
    const std::vector<float> g = model.params().grads().to_vector();
    for (size_t i = 0; i < g.size(); ++i) summed[i] += g[i] * float(n);
  }
  CHECK(loss == doctest::Approx(total / double(positions)).epsilon(1e-6));
  std::vector<double> want(summed.begin(), summed.end());
  for (double& w : want) w /= double(positions);
  CHECK(rel_error(grads, want) < 1e-4);
}

TEST_CASE("FAVOR+ models keep their draw in checkpoints, redraw on request, and a state takes the feature width") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SequenceModelConfig c;
  c.family = "test";
  c.vocabulary = 5;
  c.max_positions = 12;
  c.transformer = TransformerConfig{2, 2, 4, 8, 16, AttentionKind::linear, Direction::causal, "favor", 0.f, 6};
  c.head.kind = HeadKind::categorical;
  c.head.classes = 5;
  SequenceModel model(c, Device::cpu);
  model.init_parameters(seed);
  // S [B, H, F, E] and Z [B, H, F] per layer, F = 6.
  CHECK(model.state_numel(3, DType::f32) == 2 * (3 * 2 * 6 * 4 + 3 * 2 * 6));
  SequenceBatch b;
  b.rows = 2;
  b.length = 12;
  for (int i = 0; i < 24; ++i) b.inputs.push_back(int32_t(rng.integer(0, 4))), b.targets.push_back(int32_t(rng.integer(0, 4)));
  const double loss = model.forward(b, ForwardOptions{});
  TempDir dir;
  const std::string path = dir.file("favor.safetensors");
  model.save(path);
  const Checkpoint ck = load_safetensors(path);
  CHECK(ck.has("transformer.layers.1.attention.inner_attention.feature_map.omega"));
  CHECK(ck.meta("feature_dim") == "6");
  auto loaded = SequenceModel::load(ck, Device::cpu);
  CHECK(loaded->forward(b, ForwardOptions{}) == loss);  // the same draw, bitwise
  loaded->redraw_feature_maps(seed + 1);
  CHECK(loaded->forward(b, ForwardOptions{}) != loss);
  model.init_parameters(seed);  // the same seed draws the same maps
  CHECK(model.forward(b, ForwardOptions{}) == loss);
}
