// ImageGenerator by recomputation, the only way to sample a model without a
// recurrent form (Reformer's LSH attention): every subpixel t is drawn from
// one parallel pass over subpixels 0..t-1.
//
// What "the same distribution as teacher forcing" can mean for LSH: with
// hashing, a position's chunk window depends on where the later positions
// hash (they share the sort), and the bucket count on the length, so one
// pass over a finished image gives position t other keys than the pass over
// its prefix did while sampling. The sampled conditionals are the prefix
// passes' (with seed 0's rotations at every length, as evaluation draws
// them); with one bucket the sort is the positions' own order, nothing
// later moves a window, and they equal the finished image's single pass.
#include "model/image_generation.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

ImageModelConfig small_config(const std::string& attention, int64_t buckets) {
  ImageModelConfig c;
  c.height = 5;
  c.width = 5;
  c.channels = 1;
  c.mixtures = 4;
  c.transformer = TransformerConfig{2, 2, 4, 8, 16, AttentionKind::linear, Direction::causal, "elu", 0.f};
  c.transformer.set_attention(attention);
  c.transformer.lsh_buckets = buckets;
  c.transformer.lsh_chunk = 4;  // 24 positions: six chunks, and 12 buckets where hashing
  return c;
}

// NLL [B, T] of a parallel pass over the first T + 1 subpixels of each image
// (inputs 0..T-1, targets 1..T), seed 0.
std::vector<float> prefix_pass_nll(ImageModel& model, const std::vector<uint8_t>& pixels, int64_t B, int64_t T) {
  const int64_t S = model.config().subpixels();
  SequenceBatch b;
  b.rows = B, b.length = T;
  for (int64_t r = 0; r < B; ++r)
    for (int64_t t = 0; t < T; ++t) {
      b.inputs.push_back(pixels[r * S + t]);
      b.targets.push_back(pixels[r * S + t + 1]);
    }
  Tensor nll = Tensor::empty({B * T});
  model.core().forward(b, pass(false, 0), &nll);
  return nll.to_vector();
}

}  // namespace

TEST_CASE("an LSH model is sampled by recomputation, and asked for its recurrent form it says it has none") {
  ImageModel model(small_config("lsh-1", 64), Device::cpu);
  model.core().init_parameters(3);
  CHECK(ImageGenerator(model, 2).form() == GenerationForm::recompute);
  CHECK_THROWS_WITH_AS(ImageGenerator(model, 2, {}, GenerationForm::recurrent),
                       doctest::Contains("no recurrent form"), Error);
}

TEST_CASE("recomputation samples the images the recurrent form samples") {
  for (const char* attention : {"causal-linear", "softmax"}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << attention);
    ImageModel model(small_config(attention, 64), Device::cpu);
    model.core().init_parameters(seed);
    const int64_t B = 3;
    ImageGenerator recurrent(model, B), recompute(model, B, {}, GenerationForm::recompute);
    REQUIRE(recurrent.form() == GenerationForm::recurrent);
    std::vector<uint8_t> a, b;
    std::vector<double> nll_a, nll_b;
    recurrent.generate(seed, a, nullptr, nullptr, &nll_a);
    recompute.generate(seed, b, nullptr, nullptr, &nll_b);
    // Equal draws unless a float difference moves one across a bin edge
    // (probability ~1e-4 here); the NLLs then tell the two apart anyway.
    CHECK(a == b);
    for (size_t i = 0; i < nll_a.size(); ++i) CHECK(nll_b[i] == doctest::Approx(nll_a[i]).epsilon(1e-4));
  }
}

TEST_CASE("LSH sampling: each subpixel's NLL is the parallel pass's over its prefix, with seed 0's rotations") {
  for (const char* attention : {"lsh-1", "lsh-4"}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << attention);
    ImageModel model(small_config(attention, 64), Device::cpu);
    model.core().init_parameters(seed);
    const int64_t B = 3, S = model.config().subpixels();
    ImageGenerator gen(model, B);
    std::vector<uint8_t> pixels;
    std::vector<double> nll;
    gen.generate(seed, pixels, nullptr, nullptr, &nll);
    for (int64_t t = 1; t < S; ++t) {
      const std::vector<float> pass_nll = prefix_pass_nll(model, pixels, B, t);
      for (int64_t b = 0; b < B; ++b)
        CHECK(nll[b * (S - 1) + t - 1] == doctest::Approx(pass_nll[b * t + t - 1]).epsilon(1e-5));
    }
    std::vector<uint8_t> again;
    gen.generate(seed, again);
    CHECK(again == pixels);
  }
}

TEST_CASE("LSH with one bucket: sampling NLLs equal one parallel pass over the finished images") {
  for (const char* attention : {"lsh-1", "lsh-4"}) {
    const uint64_t seed = fresh_seed();
    INFO("seed " << seed << " " << attention);
    ImageModel model(small_config(attention, 1), Device::cpu);
    model.core().init_parameters(seed);
    const int64_t B = 3, S = model.config().subpixels();
    ImageGenerator gen(model, B);
    std::vector<uint8_t> pixels;
    std::vector<double> nll;
    gen.generate(seed, pixels, nullptr, nullptr, &nll);
    const std::vector<float> full = prefix_pass_nll(model, pixels, B, S - 1);
    for (size_t i = 0; i < nll.size(); ++i) CHECK(nll[i] == doctest::Approx(full[i]).epsilon(1e-5));
  }
}
