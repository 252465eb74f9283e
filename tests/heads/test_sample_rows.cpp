// A head's rows drawn in one pass, each with its own seed and step, against
// each row drawn alone: what an image batch relies on to give each image the
// bytes it gets alone.
#include "heads/heads.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

TEST_CASE("a head's rows each with their own seed and step draw what each row draws alone") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (HeadKind kind : {HeadKind::mixture_of_logistics, HeadKind::categorical}) {
    OutputHead head;
    head.kind = kind;
    head.mixtures = rng.integer(1, 10);
    const int64_t B = rng.integer(1, 300), W = head.width();
    std::vector<float> values = rng.normals(B * W);
    if (kind == HeadKind::mixture_of_logistics)  // log-scales in the range a model gives
      for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < head.mixtures; ++k) values[size_t(b * W + 2 * head.mixtures + k)] = float(rng.uniform(-4, 0));
    const Tensor params = Tensor::from_vector(values, {B, W});
    std::vector<uint64_t> seeds(static_cast<size_t>(B));
    std::vector<int64_t> steps(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) seeds[size_t(b)] = rng.gen(), steps[size_t(b)] = rng.integer(0, 3071);
    Tensor rows = Tensor::empty({B}, Device::cpu, DType::i32), one = Tensor::empty({1}, Device::cpu, DType::i32);
    head.sample_rows(params, seeds.data(), steps.data(), rows);
    const std::vector<int32_t> got = rows.to_vector_i32();
    INFO(head.name() << ", " << B << " rows");
    for (int64_t b = 0; b < B; ++b) {
      head.sample(params.rows(b, b + 1), seeds[size_t(b)], steps[size_t(b)], one);
      REQUIRE(got[size_t(b)] == one.to_vector_i32()[0]);
    }
  }
}
