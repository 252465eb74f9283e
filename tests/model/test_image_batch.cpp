// ImageBatch: requests that join and leave a running batch at random steps,
// each image against ImageGenerator's for its seed alone.
#include <algorithm>

#include "model/image_batch.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

ImageModelConfig small_config(int64_t channels) {
  ImageModelConfig c;
  c.height = 5;
  c.width = 4;
  c.channels = channels;
  c.mixtures = 4;
  c.transformer = TransformerConfig{2, 2, 4, 8, 16, AttentionKind::linear, Direction::causal, "elu", 0.f};
  c.first_subpixel_histogram.assign(256, 0.0);
  for (int v = 0; v < 256; v += 7) c.first_subpixel_histogram[size_t(v)] = double(v % 5 + 1);
  return c;
}

struct Request {
  uint64_t seed = 0;
  int64_t arrives = 0;
  bool completion = false;
  ImageConstraint known;
  ImageJob* job = nullptr;
  std::vector<uint8_t> got;
};

}  // namespace

TEST_CASE("images joining and leaving a running batch at random steps are each the image drawn alone") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Precision precision;
  int64_t channels = 1;
  SUBCASE("fp32, grey") {}
  SUBCASE("fp32, RGB") { channels = 3; }
  SUBCASE("bf16 products and state") {
    if (!cpu_has_bf16()) return;
    precision.products = Products::bf16;
    precision.state = DType::bf16;
  }
  ImageModel model(small_config(channels), Device::cpu);
  model.core().init_parameters(seed);
  const int64_t S = model.config().subpixels();
  std::vector<Request> requests(64);
  for (Request& r : requests) {
    r.seed = rng.gen();
    r.arrives = rng.integer(0, 3 * S);
    r.completion = rng.uniform(0, 1) < 0.4;
    if (r.completion) {
      r.known.values.resize(size_t(S));
      r.known.known.assign(size_t(S), 0);
      const int64_t prefix = rng.integer(0, S - 1);
      for (int64_t t = 0; t < S; ++t) {
        r.known.values[size_t(t)] = uint8_t(rng.integer(0, 255));
        r.known.known[size_t(t)] = t < prefix || rng.uniform(0, 1) < 0.2;
      }
    }
  }
  ImageBatch batch(model, precision);
  int64_t most = 0, finished = 0;
  for (int64_t tick = 0; finished < int64_t(requests.size()); ++tick) {
    for (Request& r : requests)
      if (r.arrives == tick) r.job = batch.add(r.seed, r.completion ? &r.known : nullptr);
    most = std::max(most, batch.step());
    for (Request& r : requests)
      if (r.job && r.job->done()) {
        r.got = r.job->pixels;
        batch.remove(r.job);
        r.job = nullptr;
        ++finished;
      }
  }
  CHECK(batch.jobs() == 0);
  // The images did share steps: about 38 of the 64 draw every subpixel over
  // S ticks of 3 S, so fewer than 5 at once never happens by chance (a
  // completion with a long known prefix may take a tick or two, hence not 16).
  CHECK(most > 4);
  model.core().prepare_step(precision);
  ImageGenerator alone(model, 1, precision);
  for (const Request& r : requests) {
    std::vector<uint8_t> want;
    alone.generate(r.seed, want, r.completion ? &r.known : nullptr);
    CHECK(r.got == want);
    if (r.completion)
      for (int64_t t = 0; t < S; ++t)
        if (r.known.known[size_t(t)]) CHECK(r.got[size_t(t)] == r.known.values[size_t(t)]);
  }
}
