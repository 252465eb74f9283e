#include <cmath>
#include <cstdio>
#include <filesystem>

#include "io/safetensors.h"
#include "io/temp_dir.h"
#include "model/image_model.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

ImageModelConfig tiny_config(AttentionKind attention, HeadKind head = HeadKind::mixture_of_logistics) {
  ImageModelConfig c;
  c.height = 3;
  c.width = 4;
  c.channels = 1;
  c.mixtures = 3;
  c.head = head;
  c.transformer.layers = 2;
  c.transformer.heads = 2;
  c.transformer.head_dim = 4;
  c.transformer.d_model = 8;
  c.transformer.ff_dim = 12;
  c.transformer.attention = attention;
  c.transformer.dropout = 0.f;
  return c;
}

Tensor random_images(Rng& rng, int64_t B, int64_t S) {
  std::vector<int32_t> v(B * S);
  for (auto& x : v) x = int32_t(rng.integer(0, 255));
  // Hit the edge bins of the mixture too.
  v[0] = 0;
  v[S - 1] = 255;
  return Tensor::from_vector(v, {B, S});
}

}  // namespace

TEST_CASE("image model gradients match finite differences (causal-linear and softmax with dropout)") {
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed << " attention " << std::string(attention_name(kind)));
    Rng rng(seed);
    ImageModelConfig c = tiny_config(kind);
    c.transformer.dropout = 0.2f;  // a fixed dropout seed makes the loss a deterministic function
    ImageModel model(c, Device::cpu);
    model.core().init_parameters(seed);
    Tensor images = random_images(rng, 2, c.subpixels());
    model.core().params().zero_grad();
    ForwardPass fp;
    model.core().forward(model.batch(images), pass(true, 77), fp);
    model.core().backward(fp);
    std::vector<float> grads = model.core().params().grads().to_vector();

    Tensor values = model.core().params().values();
    GradientProbes g;
    for (int probe = 0; probe < 60; ++probe) {
      // Random coordinates of random parameters (skipping alignment padding).
      size_t p = size_t(rng.integer(0, int64_t(model.core().params().size()) - 1));
      Tensor t = model.core().params().value(p);
      int64_t offset = (t.data() - values.data()) + rng.integer(0, t.numel() - 1);
      g.probe(values, grads, offset, [&] { return model.core().forward(model.batch(images), pass(true, 77)); });
    }
    CHECK(g.kinks <= 10);
    CHECK(rel_error(g.analytic, g.numeric) < 2e-2);
  }
}

TEST_CASE("recurrent sampling log-likelihood equals the parallel one at every position") {
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    for (HeadKind head : {HeadKind::mixture_of_logistics, HeadKind::categorical}) {
      uint64_t seed = fresh_seed();
      INFO("seed " << seed << " attention " << std::string(attention_name(kind)));
      Rng rng(seed);
      ImageModelConfig c = tiny_config(kind, head);
      c.transformer.dropout = 0.1f;  // must be off in eval and in the step
      ImageModel model(c, Device::cpu);
      model.core().init_parameters(seed);
      const int64_t B = 3, S = c.subpixels(), L = c.sequence_length();
      Tensor images = random_images(rng, B, S);
      Tensor nll = Tensor::empty({B * L});
      double mean = model.core().forward(model.batch(images), pass(false, 0), &nll);
      std::vector<float> parallel = nll.to_vector();

      std::vector<int32_t> px = images.to_vector_i32();
      RecurrentState state = model.core().new_state(B);
      Tensor logits = Tensor::empty({B, c.head_width()});
      Tensor step_nll = Tensor::empty({B});
      std::vector<double> recurrent(B * L);
      double sum = 0;
      for (int64_t t = 0; t < L; ++t) {
        std::vector<int32_t> tok(B), next(B);
        for (int64_t b = 0; b < B; ++b) tok[b] = px[b * S + t], next[b] = px[b * S + t + 1];
        model.core().step(state, Tensor::from_vector(tok, {B}), logits);
        model.log_loss(logits, Tensor::from_vector(next, {B}), step_nll);
        std::vector<float> s = step_nll.to_vector();
        for (int64_t b = 0; b < B; ++b) recurrent[b * L + t] = s[b], sum += s[b];
      }
      CHECK(rel_error(parallel, recurrent) < 1e-5);
      CHECK(std::abs(sum / double(B * L) - mean) < 1e-5 * std::abs(mean));
    }
  }
}

TEST_CASE("prefill then step continues exactly like stepping from the start and forked states agree") {
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed << " attention " << std::string(attention_name(kind)));
    Rng rng(seed);
    ImageModelConfig c = tiny_config(kind);
    ImageModel model(c, Device::cpu);
    model.core().init_parameters(seed);
    const int64_t S = c.subpixels(), T = rng.integer(1, c.sequence_length() - 1);
    std::vector<int32_t> px = random_images(rng, 1, S).to_vector_i32();

    RecurrentState stepped = model.core().new_state(1);
    Tensor head = Tensor::empty({1, c.head_width()});
    for (int64_t t = 0; t < T; ++t) model.core().step(stepped, Tensor::from_vector(std::vector<int32_t>{px[t]}, {1}), head);
    RecurrentState prefilled = model.core().new_state(1);
    Tensor head2 = Tensor::empty({1, c.head_width()});
    model.core().prefill(Tensor::from_vector(std::vector<int32_t>(px.begin(), px.begin() + T), {1, T}), prefilled, head2);
    CHECK(rel_error(head2, head) < 1e-5);

    // Fork the prefilled state into slot 2 of a batch of 3 and continue both.
    RecurrentState forked = model.core().new_state(3);
    model.core().copy_state_element(prefilled, 0, forked, 2);
    CHECK(prefilled.position == T);
    CHECK(forked.position == T);
    Tensor h1 = Tensor::empty({1, c.head_width()}), h3 = Tensor::empty({3, c.head_width()});
    model.core().step(stepped, Tensor::from_vector(std::vector<int32_t>{px[T]}, {1}), h1);
    model.core().step(forked, Tensor::from_vector(std::vector<int32_t>{0, 0, px[T]}, {3}), h3);
    CHECK(rel_error(h3.rows(2, 3), h1) < 1e-5);
  }
}

TEST_CASE("an image model continued over random chunks gives the heads of stepping") {
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    uint64_t seed = fresh_seed();
    INFO("seed " << seed << " attention " << std::string(attention_name(kind)));
    Rng rng(seed);
    ImageModelConfig c = tiny_config(kind);
    ImageModel model(c, Device::cpu);
    model.core().init_parameters(seed);
    const int64_t B = 2, S = c.subpixels(), L = c.sequence_length(), P = c.head_width();
    std::vector<int32_t> px = random_images(rng, B, S).to_vector_i32();
    RecurrentState stepped = model.core().new_state(B), chunked = model.core().new_state(B);
    Tensor head = Tensor::empty({B, P});
    std::vector<float> want, got(B * L * P);
    for (int64_t t = 0; t < L; ++t) {
      model.core().step(stepped, Tensor::from_vector(std::vector<int32_t>{px[t], px[S + t]}, {B}), head);
      const std::vector<float> h = head.to_vector();
      want.insert(want.end(), h.begin(), h.end());  // position-major [L, B, P]
    }
    for (int64_t t0 = 0; t0 < L;) {
      const int64_t T = std::min(L - t0, rng.integer(1, 6));
      std::vector<int32_t> tok;
      for (int64_t b = 0; b < B; ++b) tok.insert(tok.end(), px.begin() + b * S + t0, px.begin() + b * S + t0 + T);
      Tensor heads = Tensor::empty({B, T, P});
      model.core().continue_chunk(chunked, Tensor::from_vector(tok, {B, T}), heads);
      const std::vector<float> h = heads.to_vector();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
          std::copy(h.begin() + (b * T + t) * P, h.begin() + (b * T + t + 1) * P, got.begin() + ((t0 + t) * B + b) * P);
      t0 += T;
    }
    CHECK(rel_error(got, std::vector<double>(want.begin(), want.end())) < 1e-5);
    CHECK(rel_error(chunked.buffer, to_double(stepped.buffer)) < 1e-5);
  }
}

TEST_CASE("image model checkpoints round-trip and reject what does not fit") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  ImageModelConfig c = tiny_config(AttentionKind::linear);
  ImageModel model(c, Device::cpu);
  model.core().init_parameters(seed);
  Tensor images = random_images(rng, 2, c.subpixels());
  double loss = model.core().forward(model.batch(images), pass(false, 0));

  auto dir = std::filesystem::temp_directory_path() / ("lt-image-model-" + std::to_string(seed));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "m.safetensors").string();
  model.core().save(path, {{"dataset", "random"}});
  auto loaded = ImageModel::load(path, Device::cpu);
  CHECK(loaded->config().transformer.layers == 2);
  CHECK(loaded->config().transformer.heads == 2);
  CHECK(loaded->config().mixtures == 3);
  CHECK(loaded->config().height == 3);
  CHECK(loaded->core().forward(loaded->batch(images), pass(false, 0)) == doctest::Approx(loss).epsilon(1e-7));

  // Without the heads metadata the checkpoint cannot be interpreted.
  auto tensors = model.core().params().named_values();
  auto meta = model.core().metadata();
  meta.erase("heads");
  std::string bad = (dir / "noheads.safetensors").string();
  save_safetensors(bad, tensors, meta);
  CHECK_THROWS_WITH_AS(ImageModel::load(bad, Device::cpu), doctest::Contains("missing metadata 'heads'"), lt::Error);

  // Bad metadata values are one line naming the file and the key, whatever
  // the value: not a number, out of range, an unknown name, a huge index.
  struct BadMeta {
    const char* key;
    const char* value;
    const char* says;
  };
  for (const BadMeta& b : {BadMeta{"heads", "x", "'heads' is 'x'"}, BadMeta{"dropout", "abc", "'dropout' is 'abc'"},
                           BadMeta{"dropout", "1e99", "'dropout' is '1e99'"}, BadMeta{"dropout", "0.5x", "'dropout'"},
                           BadMeta{"attention", "reformer", "unknown attention 'reformer'"},
                           BadMeta{"feature_map", "cosine", "unknown feature map 'cosine'"},
                           BadMeta{"direction", "sideways", "unknown direction 'sideways'"},
                           BadMeta{"image_height", "4294967296", "image size"}}) {
    const std::string what = std::string(b.key) + "=" + b.value;
    INFO(what);
    auto m = model.core().metadata();
    m[b.key] = b.value;
    const std::string file = (dir / "badmeta.safetensors").string();
    save_safetensors(file, tensors, m);
    const std::string err = error_of([&] { ImageModel::load(file, Device::cpu); });
    CHECK(err.find(file) != std::string::npos);
    INFO(err);
    CHECK(err.find(b.says) != std::string::npos);
    CHECK(err.find('\n') == std::string::npos);
  }
  // A layer index far beyond the tensors present builds nothing.
  {
    auto t = tensors;
    t["transformer.layers.99999999999999999999.linear1.weight"] = Tensor::zeros({1, 1});
    t["transformer.layers.9999999.linear1.weight"] = Tensor::zeros({1, 1});
    const std::string file = (dir / "badlayer.safetensors").string();
    save_safetensors(file, t, model.core().metadata());
    const std::string err = error_of([&] { ImageModel::load(file, Device::cpu); });
    CHECK(err.find(file) != std::string::npos);
    CHECK(err.find("layer") != std::string::npos);
  }

  // A wrong shape names the tensor.
  tensors["predictor.bias"] = Tensor::zeros({4});
  std::string wrong = (dir / "wrong.safetensors").string();
  save_safetensors(wrong, tensors, model.core().metadata());
  CHECK_THROWS_WITH_AS(ImageModel::load(wrong, Device::cpu), doctest::Contains("predictor"), lt::Error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("image model config errors name the sizes") {
  ImageModelConfig c = tiny_config(AttentionKind::linear);
  c.transformer.d_model = 10;
  CHECK_THROWS_WITH_AS(ImageModel(c, Device::cpu), doctest::Contains("d_model 10 must equal heads x head_dim = 2 x 4"),
                       lt::Error);
}

TEST_CASE("a checkpoint whose sizes its tensors cannot hold is refused before anything is built") {
  TempDir dir;
  // A 4 MB embedding of width 2^12 says d_model 2^13: its attention weights
  // alone would be 1 GiB that the file does not hold.
  const std::string path = dir.file("huge.safetensors");
  save_safetensors(path,
                   {{"value_embedding.weight", Tensor::zeros({256, int64_t(1) << 12})},
                    {"transformer.layers.0.linear1.weight", Tensor::zeros({1, 1})},
                    {"predictor.weight", Tensor::zeros({30, 1})}},
                   {{"heads", "1"}, {"attention", "causal-linear"}, {"image_height", "2"}, {"image_width", "2"},
                    {"image_channels", "1"}});
  const std::string err = error_of([&] { ImageModel::load(path, Device::cpu); });
  CHECK(err.find(path) != std::string::npos);
  CHECK(err.find("need more values than") != std::string::npos);
}
