// ImageGenerator: recurrent sampling against the parallel (teacher-forced)
// model, determinism, and completions that keep the known subpixels.
#include <cmath>
#include <utility>

#include "model/image_generation.h"
#include "ops/packed_linear.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

ImageModelConfig small_config(AttentionKind attention, int64_t channels) {
  ImageModelConfig c;
  c.height = 4;
  c.width = 3;
  c.channels = channels;
  c.mixtures = 4;
  c.transformer = TransformerConfig{2, 2, 4, 8, 16, attention, Direction::causal, "elu", 0.f};
  return c;
}

Tensor as_tokens(const std::vector<uint8_t>& pixels, int64_t B, int64_t S) {
  std::vector<int32_t> v(pixels.begin(), pixels.begin() + B * S);
  return Tensor::from_vector(v, {B, S});
}

// Per image, the teacher-forced (parallel, fp32) NLL in nats of B sampled images.
std::vector<double> parallel_nll(ImageModel& model, const std::vector<uint8_t>& pixels, int64_t B) {
  const int64_t S = model.config().subpixels();
  Tensor per = Tensor::empty({B, S - 1});
  model.core().forward(model.batch(as_tokens(pixels, B, S)), pass(false, 0), &per);
  std::vector<float> p = per.to_vector();
  std::vector<double> total(B, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S - 1; ++t) total[b] += p[b * (S - 1) + t];
  return total;
}

// Per image, the sum of a generator's per-subpixel NLL [B, S - 1].
std::vector<double> per_image(const std::vector<double>& per_subpixel, int64_t B) {
  const int64_t n = int64_t(per_subpixel.size()) / B;
  std::vector<double> total(B, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < n; ++t) total[b] += per_subpixel[b * n + t];
  return total;
}

// The NLL of image's subpixels T.. when its prefix 0..T-1 goes in by
// prefill and the rest by steps, and the same sum from the parallel pass.
std::pair<double, double> prefill_and_parallel_nll(ImageModel& model, const std::vector<int32_t>& image, int64_t T,
                                                   const Precision& precision = {}) {
  const int64_t S = int64_t(image.size());
  model.core().prepare_step(precision);
  RecurrentState state = model.core().new_state(1, precision.state);
  Tensor head = Tensor::empty({1, model.config().head_width()}), nll = Tensor::empty({1});
  model.core().prefill(Tensor::from_vector(std::vector<int32_t>(image.begin(), image.begin() + T), {1, T}), state, head);
  double total = 0;
  for (int64_t t = T; t < S; ++t) {
    model.log_loss(head, Tensor::from_vector(std::vector<int32_t>{image[t]}, {1}), nll);
    total += nll.to_vector()[0];
    if (t + 1 < S) model.core().step(state, Tensor::from_vector(std::vector<int32_t>{image[t]}, {1}), head);
  }
  Tensor per = Tensor::empty({1, S - 1});
  model.core().forward(model.batch(Tensor::from_vector(image, {1, S})), pass(false, 0), &per);
  std::vector<float> p = per.to_vector();
  double parallel = 0;
  for (int64_t t = T - 1; t < S - 1; ++t) parallel += p[t];
  return {total, parallel};
}

}  // namespace

TEST_CASE("recurrent sampling log-likelihoods equal the parallel model on the sampled images") {
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax})
    for (int64_t channels : {1, 3}) {
      const uint64_t seed = fresh_seed();
      INFO("seed " << seed << " " << std::string(attention_name(kind)) << " channels " << channels);
      ImageModel model(small_config(kind, channels), Device::cpu);
      model.core().init_parameters(seed);
      const int64_t B = 3;
      ImageGenerator gen(model, B);
      std::vector<uint8_t> pixels;
      std::vector<double> nll;
      gen.generate(seed, pixels, nullptr, nullptr, &nll);
      const std::vector<double> parallel = parallel_nll(model, pixels, B), sampled = per_image(nll, B);
      for (int64_t b = 0; b < B; ++b) CHECK(sampled[b] == doctest::Approx(parallel[b]).epsilon(1e-5));
    }
}

TEST_CASE("the same seed gives the same images and another seed other images") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  ImageModel model(small_config(AttentionKind::linear, 1), Device::cpu);
  model.core().init_parameters(seed);
  ImageGenerator gen(model, 4);
  std::vector<uint8_t> a, b, c;
  gen.generate(seed, a);
  gen.generate(seed, b);
  gen.generate(seed + 1, c);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("the first subpixel is drawn from the model's histogram") {
  ImageModelConfig c = small_config(AttentionKind::linear, 1);
  c.first_subpixel_histogram.assign(256, 0.0);
  c.first_subpixel_histogram[77] = 3;
  c.first_subpixel_histogram[200] = 1;
  ImageModel model(c, Device::cpu);
  model.core().init_parameters(5);
  const int64_t B = 64, S = c.subpixels();
  ImageGenerator gen(model, B);
  std::vector<uint8_t> pixels;
  gen.generate(fresh_seed(), pixels);
  int n77 = 0, n200 = 0;
  for (int64_t b = 0; b < B; ++b) n77 += pixels[b * S] == 77, n200 += pixels[b * S] == 200;
  CHECK(n77 + n200 == B);
  CHECK(n77 > n200);  // 3:1 odds; failing by chance has probability < 1e-4
  CHECK(n200 > 0);
}

TEST_CASE("completions keep every known subpixel for prefix and scattered masks") {
  // lsh-4 has no recurrent form: its completions come from recomputation.
  for (const char* attention : {"causal-linear", "softmax", "lsh-4"}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << attention);
    Rng rng(seed);
    ImageModelConfig c = small_config(AttentionKind::linear, 3);
    c.transformer.set_attention(attention);
    ImageModel model(c, Device::cpu);
    model.core().init_parameters(seed);
    const int64_t K = 5, S = model.config().subpixels();
    ImageGenerator gen(model, K);
    for (int pattern = 0; pattern < 3; ++pattern) {
      ImageConstraint k;
      k.values.resize(S);
      k.known.resize(S);
      for (int64_t i = 0; i < S; ++i) {
        k.values[i] = uint8_t(rng.integer(0, 255));
        k.known[i] = pattern == 0 ? i < 13 : pattern == 1 ? rng.integer(0, 1) : i >= 3;  // prefix, scattered, none first
      }
      std::vector<uint8_t> pixels;
      gen.generate(seed, pixels, &k);
      bool completions_differ = false;
      for (int64_t b = 0; b < K; ++b)
        for (int64_t i = 0; i < S; ++i) {
          if (k.known[i]) REQUIRE(pixels[b * S + i] == k.values[i]);
          if (b > 0 && pixels[b * S + i] != pixels[i]) completions_differ = true;
        }
      CHECK(completions_differ);
    }
  }
}

TEST_CASE("a completion from a prefill equals one that steps through the prefix") {
  // The forked prefill state must predict what stepping predicts: the
  // log-likelihood of a full image is the same whichever way its prefix went in.
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  ImageModel model(small_config(AttentionKind::linear, 1), Device::cpu);
  model.core().init_parameters(seed);
  std::vector<int32_t> image(model.config().subpixels());
  for (auto& v : image) v = int32_t(rng.integer(0, 255));
  const auto [total, parallel] = prefill_and_parallel_nll(model, image, 7);
  CHECK(total == doctest::Approx(parallel).epsilon(1e-5));
}

TEST_CASE("bf16 steps track the fp32 model and switching back restores fp32 exactly") {
  if (!cpu_has_bf16()) {
    std::printf("LT-SKIP: this CPU lacks AVX512_BF16\n");
    return;
  }
  for (AttentionKind kind : {AttentionKind::linear, AttentionKind::softmax}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << std::string(attention_name(kind)));
    ImageModelConfig c = small_config(kind, 1);
    c.transformer = TransformerConfig{2, 4, 8, 32, 64, kind, Direction::causal, "elu", 0.f};
    ImageModel model(c, Device::cpu);
    model.core().init_parameters(seed);
    const int64_t B = 5;
    ImageGenerator gen(model, B), gen16(model, B, Precision{Products::bf16, DType::bf16});
    std::vector<uint8_t> fp32, again, pixels;
    gen.generate(seed, fp32);
    std::vector<double> nll;
    gen16.generate(seed, pixels, nullptr, nullptr, &nll);
    // Each product rounds its operands to 8 bits: the per-image NLL moves by
    // well under a percent, while a wrong packing would change it entirely.
    const std::vector<double> parallel = parallel_nll(model, pixels, B), sampled = per_image(nll, B);
    for (int64_t b = 0; b < B; ++b) CHECK(sampled[b] == doctest::Approx(parallel[b]).epsilon(1e-2));
    gen.generate(seed, again);  // the fp32 generator prepares its own weights again
    CHECK(again == fp32);
  }
}

TEST_CASE("at bf16 the linear state takes half the bytes and a prefill continues like the parallel model") {
  if (!cpu_has_bf16()) {
    std::printf("LT-SKIP: this CPU lacks AVX512_BF16\n");
    return;
  }
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  ImageModelConfig c = small_config(AttentionKind::linear, 1);
  c.transformer = TransformerConfig{2, 4, 8, 32, 64, AttentionKind::linear, Direction::causal, "elu", 0.f};
  ImageModel model(c, Device::cpu);
  model.core().init_parameters(seed);
  const int64_t B = 3, H = 4, E = 8, per_layer_z = B * H * E;
  CHECK(model.core().state_numel(B, DType::f32) == 2 * (B * H * E * E + per_layer_z));
  CHECK(model.core().state_numel(B, DType::bf16) == 2 * (B * H * E * E / 2 + per_layer_z));
  CHECK(model.core().new_state(B, DType::bf16).buffer.numel() == 2 * (B * H * E * E / 2 + per_layer_z));
  // A state whose buffer does not match its dtype is refused, naming both.
  RecurrentState wrong = model.core().new_state(B);
  wrong.layout.dtype = DType::bf16;
  Tensor tokens = Tensor::zeros({B}, Device::cpu, DType::i32), head = Tensor::empty({B, c.head_width()});
  CHECK_THROWS_WITH_AS(model.core().step(wrong, tokens, head), doctest::Contains("bfloat16 S"), lt::Error);

  // Prefill a prefix into a bf16 state, then step: the image's log-likelihood
  // stays within a percent of the fp32 parallel model's.
  std::vector<int32_t> image(c.subpixels());
  for (auto& v : image) v = int32_t(rng.integer(0, 255));
  const auto [total, parallel] = prefill_and_parallel_nll(model, image, 5, Precision{Products::bf16, DType::bf16});
  CHECK(total == doctest::Approx(parallel).epsilon(1e-2));
}

TEST_CASE("generation packs the weights it samples with afresh: changed weights are never stale") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  ImageModel model(small_config(AttentionKind::linear, 1), Device::cpu), other(model.config(), Device::cpu);
  model.core().init_parameters(seed);
  other.core().init_parameters(seed + 1);
  ImageGenerator gen(model, 3), other_gen(other, 3);
  std::vector<uint8_t> before, after, want;
  gen.generate(seed, before);
  Tensor values = model.core().params().values();  // a view: writes reach the model
  values.copy_from(other.core().params().values());
  gen.generate(seed, after);
  other_gen.generate(seed, want);
  CHECK(after == want);
  CHECK(after != before);
}
