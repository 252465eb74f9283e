// The speech model: feature frames in, CTC over whole rows out, on the one
// SequenceModel; its recurrent form and its checkpoints with the front end.
#include <tuple>

#include "io/temp_dir.h"
#include "model/speech_batch.h"
#include "speech/speech_model.h"
#include "test_util.h"
#include "train/training_loop.h"

using namespace lt;
using namespace lt::test;

namespace {

SequenceModelConfig small_speech_config(AttentionKind kind, Direction dir, int64_t features, int64_t ff_conv = 0) {
  TransformerConfig t{2, 2, 4, 8, 16, kind, dir, "elu", 0.f};
  t.ff_conv = ff_conv;
  return speech_model_config(t, features, 5, 64);
}

}  // namespace

TEST_CASE("a CTC speech model's padded batch scores each row as the rows alone do, in both directions") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (auto [kind, dir, conv] : {std::tuple{AttentionKind::linear, Direction::bidirectional, 0},
                                 {AttentionKind::softmax, Direction::bidirectional, 0},
                                 {AttentionKind::linear, Direction::causal, 0},
                                 {AttentionKind::linear, Direction::bidirectional, 5}}) {
    INFO(attention_name(kind, dir) << ", feed-forward convolution " << conv);
    SequenceModel model(small_speech_config(kind, dir, 6, conv), Device::cpu);
    model.init_parameters(seed);
    const SequenceBatch batch = random_speech_batch(rng, 3, 12, 6, 5);
    model.params().zero_grad();
    ForwardPass fp;
    const double loss = model.forward(batch, ForwardOptions{}, fp);
    CHECK(fp.counted() == int64_t(batch.labels.labels.size()));
    model.backward(fp);
    const std::vector<float> grads = model.params().grads().to_vector();
    // Each row alone and unpadded; the batch's loss is nats per label.
    double nats = 0;
    std::vector<double> want(grads.size(), 0.0);
    for (int64_t r = 0; r < 3; ++r) {
      SequenceBatch one = batch.slice(r, r + 1);
      const int64_t n = batch.lengths[r];
      one.length = n;
      one.features.resize(size_t(n * 6));
      std::copy(batch.features.begin() + r * 12 * 6, batch.features.begin() + (r * 12 + n) * 6, one.features.begin());
      one.lengths.clear();
      const int64_t labels = one.labels.length(0);
      nats += model.forward(one, ForwardOptions{}, fp) * double(labels);
      model.params().zero_grad();
      model.backward(fp);
      const std::vector<float> g = model.params().grads().to_vector();
      for (size_t i = 0; i < g.size(); ++i) want[i] += double(g[i]) * double(labels);
    }
    const double total = double(batch.labels.labels.size());
    CHECK(loss == doctest::Approx(nats / total).epsilon(1e-5));
    for (double& w : want) w /= total;
    CHECK(rel_error(grads, want) < 1e-4);
  }
}

TEST_CASE("a CTC speech model's gradient matches central differences of its loss, with and without a feed-forward convolution") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t conv : {0, 3}) {
    INFO("feed-forward convolution " << conv);
    SequenceModel model(small_speech_config(AttentionKind::linear, Direction::bidirectional, 6, conv), Device::cpu);
    model.init_parameters(seed);
    const SequenceBatch batch = random_speech_batch(rng, 2, 9, 6, 5);
    model.params().zero_grad();
    ForwardPass fp;
    model.forward(batch, ForwardOptions{}, fp);
    model.backward(fp);
    const std::vector<float> grads = model.params().grads().to_vector();
    Tensor values = model.params().values();
    GradientProbes probes;
    // Coordinates in every tensor: the input projection first, the predictor last.
    for (size_t t = 0; t < model.params().size(); ++t) {
      const int64_t begin = model.params().value(t).data() - values.data();
      const int64_t n = model.params().value(t).numel();
      for (int k = 0; k < 2; ++k)
        probes.probe(values, grads, begin + rng.integer(0, n - 1), [&] { return model.forward(batch, ForwardOptions{}); });
    }
    INFO("kinks " << probes.kinks);
    CHECK(probes.analytic.size() >= model.params().size());
    CHECK(rel_error(probes.analytic, probes.numeric) < 2e-2);
  }
}

TEST_CASE("a causal speech model run frame by frame as an RNN gives the parallel pass's logits") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SequenceModel model(small_speech_config(AttentionKind::linear, Direction::causal, 6), Device::cpu);
  model.init_parameters(seed);
  const int64_t B = 2, T = 11, F = 6, C = 5;
  SequenceBatch batch = random_speech_batch(rng, B, T, F, C);
  batch.lengths.clear();
  const std::vector<float> parallel = model.predict(batch, ForwardOptions{}).to_vector();
  model.prepare_step(Precision{});
  RecurrentState state = model.new_state(B);
  state.buffer.zero();
  std::vector<double> want;
  std::vector<float> got;
  Tensor head = Tensor::empty({B, C});
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> frame;
    for (int64_t b = 0; b < B; ++b)
      frame.insert(frame.end(), batch.features.begin() + (b * T + t) * F, batch.features.begin() + (b * T + t + 1) * F);
    model.step(state, Tensor::from_vector(frame, {B, F}), head);
    const std::vector<float> h = head.to_vector();
    got.insert(got.end(), h.begin(), h.end());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) want.push_back(parallel[size_t((b * T + t) * C + c)]);
  }
  CHECK(rel_error(got, want) < 1e-5);
  SUBCASE("positions are computed, not looked up: a stream runs past max_positions") {
    while (state.position <= model.config().max_positions + 5)
      model.step(state, Tensor::from_vector(rng.normals(B * F), {B, F}), head);
    for (float v : head.to_vector()) CHECK(std::isfinite(v));
  }
}

TEST_CASE("a speech checkpoint holds the model (with a feed-forward convolution) and its front end, and loads back as a speech model") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  TempDir tmp;
  FbankConfig fb;
  SpeechFrontEnd frontend(fb, FrameWindow{2, 3, 1});
  FeatureStats stats(fb.bins);
  const std::vector<float> frames = rng.normals(50 * fb.bins, 3);
  stats.add(frames.data(), 50);
  frontend.set_statistics(stats);
  SequenceModel model(small_speech_config(AttentionKind::linear, Direction::bidirectional, frontend.features(), 3),
                      Device::cpu);
  model.init_parameters(seed);
  const std::string path = tmp.file("asr.safetensors");
  model.save(path, frontend.metadata(), frontend.tensors());
  SpeechModel loaded = load_speech_model(path, Device::cpu);
  CHECK(loaded.model->config().input_features == frontend.features());
  CHECK(loaded.model->config().head.kind == HeadKind::ctc);
  CHECK(loaded.model->config().transformer.direction == Direction::bidirectional);
  CHECK(loaded.model->config().transformer.ff_conv == 3);
  CHECK(loaded.frontend.window() == FrameWindow{2, 3, 1});
  CHECK(loaded.frontend.features() == fb.bins * 6);
  CHECK(loaded.frontend.encoder_inputs(frames) == frontend.encoder_inputs(frames));
  CHECK(loaded.model->params().values().to_vector() == model.params().values().to_vector());
  SUBCASE("a file from before context frames has none; a window outside the ranges is one line") {
    SpeechFrontEnd plain(fb, FrameWindow{2});
    plain.set_statistics(stats);
    SequenceModel m(small_speech_config(AttentionKind::linear, Direction::bidirectional, plain.features()), Device::cpu);
    std::map<std::string, std::string> meta = plain.metadata();
    meta.erase("frame_past");
    meta.erase("frame_future");
    const std::string old = tmp.file("old.safetensors");
    m.save(old, meta, plain.tensors());
    CHECK(load_speech_model(old, Device::cpu).frontend.window() == FrameWindow{2});
    meta["frame_past"] = "65";
    const std::string bad = tmp.file("bad.safetensors");
    m.save(bad, meta, plain.tensors());
    const std::string msg = error_of([&] { load_speech_model(bad, Device::cpu); });
    CHECK(msg.rfind(bad + ": metadata frame_stack 2, frame_past 65", 0) == 0);
  }
  SUBCASE("an image checkpoint is not a speech model") {
    SequenceModelConfig c;
    c.transformer = TransformerConfig{1, 2, 4, 8, 16, AttentionKind::linear, Direction::causal, "elu", 0.f};
    c.max_positions = 4;
    SequenceModel image(c, Device::cpu);
    const std::string other = tmp.file("image.safetensors");
    image.save(other);
    const std::string msg = error_of([&] { load_speech_model(other, Device::cpu); });
    CHECK(msg.rfind(other, 0) == 0);
    CHECK(msg.find("not a speech model") != std::string::npos);
  }
}

TEST_CASE("a CTC batch split over CPU replicas gives the whole batch's loss and gradient (shares weighed by labels)") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  SequenceModel model(small_speech_config(AttentionKind::linear, Direction::bidirectional, 6), Device::cpu);
  model.init_parameters(seed);
  // Rows with very different label counts, so weighing by frames would be wrong.
  SequenceBatch batch = random_speech_batch(rng, 5, 14, 6, 5);
  model.params().zero_grad();
  ForwardPass fp;
  const double whole = model.forward(batch, ForwardOptions{}, fp);
  model.backward(fp);
  const std::vector<float> want = model.params().grads().to_vector();
  set_num_threads(2);
  {
    ReplicaSet replicas(model, batch.rows);
    REQUIRE(replicas.replicas() == 2);
    model.params().zero_grad();
    const BatchScore s = replicas.forward_backward(batch, ForwardOptions{});
    CHECK(s.loss == doctest::Approx(whole).epsilon(1e-5));
    CHECK(rel_error(model.params().grads().to_vector(), to_double(Tensor::from_vector(want, {int64_t(want.size())}))) <
          1e-4);
    CHECK(replicas.forward(batch, ForwardOptions{}).loss == doctest::Approx(whole).epsilon(1e-5));
  }
  set_num_threads(0);
}
