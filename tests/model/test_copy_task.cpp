// The copy task (paper section 4.1.1): the batches against the reference's
// CopyTask formulas, the copy model's loss and accuracy against a float64 model,
// its gradients against finite differences (LSH attention's too), checkpoints, and that a tiny model
// actually learns to copy with both attentions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

#include "backend/device.h"
#include "io/temp_dir.h"
#include "model/image_model.h"
#include "model/reference_model.h"
#include "test_util.h"
#include "train/copy_task.h"
#include "train/trainer.h"

using namespace lt;
using namespace lt::test;

namespace {

CopyTaskConfig tiny_copy_config(AttentionKind attention, int64_t layers = 2, int64_t d = 16, int64_t heads = 2) {
  CopyTaskConfig c;
  c.sequence_length = 16;
  c.symbols = 4;
  c.transformer = TransformerConfig{layers, heads, d / heads, d, 2 * d, attention, Direction::causal, "elu", 0.f};
  return c;
}

// The float64 model's mean cross entropy over the counted positions (pooled
// over the batch, as the reference's (mask * l).mean() / mask.mean()) and the
// fraction of argmax hits; `close` counts positions whose top two logits are
// too close to call in float32.
struct RefScore {
  double loss = 0, accuracy = 0;
  int64_t close = 0, counted = 0;
};

RefScore reference_score(SequenceModel& model, const SequenceBatch& b) {
  const CopyTaskConfig c = copy_task_of(model.config());
  const int64_t L = c.sequence_length, V = c.symbols + 1, d = c.transformer.d_model;
  RefWeights W(model.params().named_values());
  std::vector<double> pe = ref_position_code(L, d / 2);
  RefScore s;
  int64_t right = 0;
  for (int64_t r = 0; r < b.rows; ++r) {
    std::vector<int32_t> x(b.inputs.begin() + r * L, b.inputs.begin() + (r + 1) * L);
    std::vector<double> logits = ref_sequence_model(W, c.transformer.layers, c.transformer.heads,
                                                    c.transformer.attention == AttentionKind::softmax, x, pe);
    for (int64_t i = b.first[r]; i < b.last[r]; ++i) {
      const double* row = &logits[i * V];
      const double top = *std::max_element(row, row + V);
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - top);
      const int32_t target = b.targets[r * L + i];
      s.loss += -(row[target] - top - std::log(sum));
      const int64_t best = std::max_element(row, row + V) - row;
      right += best == target;
      double second = -1e300;
      for (int64_t v = 0; v < V; ++v)
        if (v != best) second = std::max(second, row[v]);
      s.close += top - second < 1e-4;
      ++s.counted;
    }
  }
  s.loss /= double(s.counted);
  s.accuracy = double(right) / double(s.counted);
  return s;
}

}  // namespace

TEST_CASE("copy batches follow the reference CopyTask formulas") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  struct Case {
    int64_t L, symbols;
  };
  for (Case k : {Case{8, 1}, Case{16, 4}, Case{17, 3}, Case{128, 10}}) {
    INFO("L " << k.L << " symbols " << k.symbols);
    CopyTaskConfig c;
    c.sequence_length = k.L;
    c.symbols = k.symbols;
    // n ~ torch.randint(L // 4, (L - 1) // 2): the upper end excluded.
    const int64_t lo = k.L / 4, hi = (k.L - 1) / 2;
    std::set<int64_t> lengths;
    std::set<int32_t> symbols;
    for (int64_t step = 0; step < 10; ++step) {
      SequenceBatch b;
      make_copy_batch(c, seed, step, 64, b);
      REQUIRE(b.rows == 64);
      REQUIRE(b.inputs.size() == size_t(64 * k.L));
      REQUIRE(b.targets.size() == size_t(64 * k.L));
      for (int64_t r = 0; r < b.rows; ++r) {
        const int32_t* x = &b.inputs[r * k.L];
        const int32_t* y = &b.targets[r * k.L];
        // The symbols are 1..S, so the separator is the first 0.
        const int64_t n = std::find(x, x + k.L, 0) - x;
        INFO("row " << r << " n " << n);
        REQUIRE(n >= lo);
        REQUIRE(n < hi);
        lengths.insert(n);
        for (int64_t i = 0; i < n; ++i) {
          CHECK(x[i] >= 1);
          CHECK(x[i] <= k.symbols);
          symbols.insert(x[i]);
          CHECK(x[n + 1 + i] == x[i]);  // x[n+1:2n+1] = x[:n]
        }
        for (int64_t i = 2 * n + 1; i < k.L; ++i) CHECK(x[i] == 0);
        for (int64_t i = 0; i + 1 < k.L; ++i) CHECK(y[i] == x[i + 1]);  // y[:-1] = x[1:]
        CHECK(y[k.L - 1] == 0);
        CHECK(b.first[r] == n - 1);  // mask[n-1:2n] = 1
        CHECK(b.last[r] == 2 * n);
        CHECK(y[n - 1] == 0);  // the first counted target is the separator
      }
    }
    // 640 rows cover every length and every symbol.
    CHECK(int64_t(lengths.size()) == hi - lo);
    CHECK(int64_t(symbols.size()) == k.symbols);
  }
}

TEST_CASE("copy batches are a function of seed and step and row only") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  CopyTaskConfig c;
  SequenceBatch a, b, other, few;
  make_copy_batch(c, seed, 5, 32, a);
  make_copy_batch(c, seed, 6, 32, other);  // in between: no hidden state
  make_copy_batch(c, seed, 5, 32, b);
  make_copy_batch(c, seed, 5, 3, few);
  CHECK(a.inputs == b.inputs);
  CHECK(a.targets == b.targets);
  CHECK(a.first == b.first);
  CHECK(a.last == b.last);
  CHECK(a.inputs != other.inputs);
  CHECK(std::equal(few.inputs.begin(), few.inputs.end(), a.inputs.begin()));
  make_copy_batch(c, seed + 1, 5, 32, other);
  CHECK(a.inputs != other.inputs);
}

TEST_CASE("copy model loss and accuracy equal a float64 model (causal-linear and softmax)") {
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " attention " << std::string(attention_name(kind)));
    CopyTaskConfig c = tiny_copy_config(kind);
    c.transformer.dropout = 0.3f;  // train=false must switch it off
    SequenceModel model(c.sequence_config(), Device::cpu);
    model.init_parameters(seed);
    SequenceBatch b;
    make_copy_batch(c, seed, 0, 6, b);
    double accuracy = -1;
    const double loss = model.forward(b, pass(false, 123), nullptr, &accuracy);
    RefScore ref = reference_score(model, b);
    CHECK(std::abs(loss - ref.loss) < 1e-5 * std::max(1.0, ref.loss));
    CHECK(std::abs(accuracy - ref.accuracy) <= double(ref.close) / double(ref.counted) + 1e-12);
    CHECK(loss > 0);

    // A trained model is confident, so its accuracy is far from chance and
    // its argmax unambiguous: train a few steps, then compare again.
    TrainOptions opt;
    opt.optimizer = "adam";
    opt.schedule.lr = 3e-3f;
    Trainer trainer(model.params(), opt);
    ForwardPass fp;
    for (int64_t step = 0; step < 40; ++step) {
      make_copy_batch(c, seed, step + 1, 16, b);
      model.forward(b, pass(false, 0), fp);
      model.backward(fp);
      trainer.update();
    }
    make_copy_batch(c, seed, 1000, 8, b);
    const double loss2 = model.forward(b, pass(false, 0), nullptr, &accuracy);
    ref = reference_score(model, b);
    CHECK(std::abs(loss2 - ref.loss) < 1e-5 * std::max(1.0, ref.loss));
    CHECK(std::abs(accuracy - ref.accuracy) <= double(ref.close) / double(ref.counted) + 1e-12);
  }
}

TEST_CASE("copy model gradients match finite differences") {
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax, AttentionKind::lsh}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " attention " << std::string(attention_name(kind)));
    Rng rng(seed);
    CopyTaskConfig c = tiny_copy_config(kind);
    c.transformer.lsh_rounds = 4;  // lsh-4 in chunks of 8: several chunks and rounds to merge
    c.transformer.lsh_chunk = 8;
    SequenceModel model(c.sequence_config(), Device::cpu);
    model.init_parameters(seed);
    SequenceBatch b;
    make_copy_batch(c, seed, 3, 3, b);
    model.params().zero_grad();
    ForwardPass fp;
    model.forward(b, pass(true, 9), fp);
    model.backward(fp);
    std::vector<float> grads = model.params().grads().to_vector();
    Tensor values = model.params().values();
    GradientProbes g;
    // Every parameter tensor, a few random coordinates each.
    for (size_t p = 0; p < model.params().size(); ++p) {
      Tensor t = model.params().value(p);
      for (int probe = 0; probe < 3; ++probe)
        g.probe(values, grads, (t.data() - values.data()) + rng.integer(0, t.numel() - 1),
                [&] { return model.forward(b, pass(true, 9)); });
    }
    CHECK(g.kinks <= int(g.analytic.size()) / 5);
    CHECK(rel_error(g.analytic, g.numeric) < 2e-2);
  }
}

TEST_CASE("copy model checkpoints round-trip and reject image checkpoints") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  TempDir dir;
  CopyTaskConfig c = tiny_copy_config(AttentionKind::softmax, 1, 8, 1);
  c.sequence_length = 12;
  c.symbols = 6;
  c.transformer.dropout = 0.25f;
  SequenceModel model(c.sequence_config(), Device::cpu);
  model.init_parameters(seed);
  const std::string path = dir.file("copy.safetensors");
  model.save(path, {{"note", "kept"}});

  auto loaded = load_copy_model(path, Device::cpu);
  const CopyTaskConfig l = copy_task_of(loaded->config());
  CHECK(l.sequence_length == 12);
  CHECK(l.symbols == 6);
  CHECK(l.transformer.layers == 1);
  CHECK(l.transformer.heads == 1);
  CHECK(l.transformer.d_model == 8);
  CHECK(l.transformer.ff_dim == 16);
  CHECK(l.transformer.attention == AttentionKind::softmax);
  CHECK(l.transformer.dropout == doctest::Approx(0.25));
  std::vector<float> a = model.params().values().to_vector(), b = loaded->params().values().to_vector();
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  SequenceBatch batch;
  make_copy_batch(c, seed, 0, 4, batch);
  CHECK(model.forward(batch, pass(false, 0)) == loaded->forward(batch, pass(false, 0)));
  CHECK(load_safetensors(path).meta("note") == "kept");

  // An image model's checkpoint is not a copy model.
  ImageModelConfig ic;
  ic.height = 2, ic.width = 3;
  ic.mixtures = 2;
  ic.transformer = TransformerConfig{1, 2, 4, 8, 16, AttentionKind::linear, Direction::causal, "elu", 0.1f};
  ImageModel image(ic, Device::cpu);
  const std::string image_path = dir.file("image.safetensors");
  image.core().save(image_path);
  std::string err = error_of([&] { load_copy_model(image_path, Device::cpu); });
  CHECK(err.find(image_path) != std::string::npos);
  CHECK(err.find("copy") != std::string::npos);
}

TEST_CASE("a tiny copy model learns to copy with causal-linear and softmax attention") {
  // L 16: n in {4, 5, 6}, 4 symbols. Only positions n-1 .. 2n-1 count, so the
  // separator is learnable (predict 0 before it, everything there is
  // uncounted) and a perfect model scores 1; one that only learned the
  // separator scores about (1 + n/4) / (n + 1) = 0.4. Measured over seeds
  // 1-6 and 11 after 300 steps: causal-linear 0.971-0.997 (loss 0.013-0.077),
  // softmax 0.997-1 (loss 0.001-0.01), 1.6-2.4 s each on the development
  // machine with a training job beside it.
  // One thread: at these sizes OpenMP's fork and join cost more than they
  // save, and far more when ctest runs tests side by side on few cores.
  OneThread one_thread;
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    const uint64_t seed = 11;  // fixed: the thresholds were measured with it
    INFO("attention " << std::string(attention_name(kind)));
    const auto start = std::chrono::steady_clock::now();
    CopyTaskConfig c = tiny_copy_config(kind, 2, 32, 4);
    c.transformer.ff_dim = 128;
    SequenceModel model(c.sequence_config(), Device::cpu);
    model.init_parameters(seed);
    TrainOptions opt;
    opt.optimizer = "adam";
    opt.schedule.lr = 3e-3f;
    opt.seed = seed;
    Trainer trainer(model.params(), opt);
    // The one training loop, as lt-train runs it (one thread: one replica).
    CopyTrainingTask task(c, seed);
    TrainLoopSettings s;
    s.batch = 32;
    s.steps = 300;
    s.checkpoint_every = 0;
    REQUIRE(train_model(model, trainer, task, s, nullptr).status == TrainStatus::finished);
    SequenceBatch b;
    double loss = 0, accuracy = 0;
    for (int64_t i = 0; i < 10; ++i) {
      double acc = 0;
      make_copy_batch(c, seed + 1000, i, 32, b);
      loss += model.forward(b, pass(false, 0), nullptr, &acc) / 10;
      accuracy += acc / 10;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(std::string(attention_name(kind)) << ": test accuracy " << accuracy << ", loss " << loss << " after 300 steps, "
                                 << secs << " s");
    CHECK(accuracy > 0.93);
    CHECK(loss < 0.25);
  }
}
