// The shipped checkpoints keep their numbers: a fixed seed samples the same
// images (pinned by a hash of their bytes) and the parallel pass scores them
// with the same log-likelihood (pinned to 1e-6), as before the sequence-model
// core (the values were checked against that build: the same PNGs and
// bits/dim for both models). A change to any arithmetic on these paths shows
// here first.
#include <cstdint>
#include <string>
#include <vector>

#include "model/image_generation.h"
#include "model/image_model.h"
#include "test_util.h"

using namespace lt;

namespace {
uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

struct Pinned {
  const char* file;
  uint64_t pixels_hash;  // of 3 images sampled with seed 20261124
  double nats_per_dim;   // their mean NLL per predicted subpixel, parallel pass
};
}  // namespace

TEST_CASE("shipped models sample the same images and score them the same") {
  const Pinned pinned[] = {{"mnist.safetensors", 0x30f7d4ef8ec13925ull, 0.84027943793639071},
                           {"fashion-mnist.safetensors", 0x3c9f42149f12ea3aull, 0.91006750321430652}};
  for (const Pinned& p : pinned) {
    INFO(p.file);
    auto model = ImageModel::load(std::string(LT_WEIGHTS_DIR) + "/" + p.file, Device::cpu);
    ImageGenerator gen(*model, 3);
    std::vector<uint8_t> pixels;
    gen.generate(20261124, pixels);
    const std::vector<int32_t> tokens(pixels.begin(), pixels.end());
    const double nats =
        model->core().forward(model->batch(Tensor::from_vector(tokens, {3, model->config().subpixels()})), ForwardOptions{});
    CHECK(fnv1a(pixels) == p.pixels_hash);
    CHECK(nats == doctest::Approx(p.nats_per_dim).epsilon(1e-6));
  }
}
