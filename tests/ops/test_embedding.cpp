#include <algorithm>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
std::vector<int32_t> random_ids(Rng& rng, int64_t n, int64_t V) {
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(rng.integer(0, V - 1));
  return ids;
}
}  // namespace

TEST_CASE("embedding forward gathers table rows") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t max_n : {9, 2000}) {  // the second size takes the OpenMP path
    const int64_t N = rng.integer(1, 3), L = rng.integer(1, max_n), V = rng.integer(1, 50), C = rng.integer(1, 40);
    std::vector<int32_t> idv = random_ids(rng, N * L, V);
    Tensor ids = Tensor::from_vector(idv, {N, L}), table = rng.randn({V, C}), y = Tensor::empty({N, L, C});
    embedding_forward(ids, table, y);
    auto tv = to_double(table);
    std::vector<double> ref(N * L * C);
    for (int64_t i = 0; i < N * L; ++i)
      for (int64_t c = 0; c < C; ++c) ref[i * C + c] = tv[idv[i] * C + c];
    CHECK(rel_error(y, ref) == 0);
  }
}

TEST_CASE("embedding backward accumulates rows of dy into dtable and repeated ids add up") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // float sums: keep repeats per id to ~100 so that the error stays under 1e-5.
  for (int64_t max_n : {9, 3000}) {
    const int64_t n = rng.integer(1, max_n), V = rng.integer(std::max<int64_t>(1, n / 100), 40), C = rng.integer(1, 40);
    std::vector<int32_t> idv = random_ids(rng, n, V);
    Tensor ids = Tensor::from_vector(idv, {n}), dy = rng.randn({n, C}), dtable = rng.randn({V, C});
    std::vector<double> ref = to_double(dtable), dyv = to_double(dy);
    embedding_backward(ids, dy, dtable);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < C; ++c) ref[idv[i] * C + c] += dyv[i * C + c];
    CHECK(rel_error(dtable, ref) < 1e-5);
  }
}

TEST_CASE("embedding backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t n = rng.integer(1, 8), V = rng.integer(1, 5), C = rng.integer(1, 6);
  Tensor ids = Tensor::from_vector(random_ids(rng, n, V), {n}), table = rng.randn({V, C});
  std::vector<float> w = rng.normals(n * C);
  Tensor y = Tensor::empty({n, C}), dtable = Tensor::zeros({V, C});
  auto loss = [&] {
    embedding_forward(ids, table, y);
    return dot(y, w);
  };
  embedding_backward(ids, Tensor::from_vector(w, {n, C}), dtable);
  CHECK(rel_error(dtable, numeric_grad(table, loss)) < 1e-3);
}

TEST_CASE("embedding rejects out-of-range ids and float ids and mismatched shapes") {
  Tensor table = Tensor::zeros({5, 3}), y = Tensor::zeros({4, 3}), dtable = Tensor::zeros({5, 3});
  Tensor high = Tensor::from_vector(std::vector<int32_t>{0, 4, 5, 1}, {4});
  CHECK_THROWS_WITH_AS(embedding_forward(high, table, y), doctest::Contains("id 5 at position 2 is outside [0, V) for V = 5"),
                       lt::Error);
  Tensor negative = Tensor::from_vector(std::vector<int32_t>{0, -1, 7, 1}, {4});
  CHECK_THROWS_WITH_AS(embedding_backward(negative, y, dtable), doctest::Contains("id -1 at position 1"), lt::Error);
  CHECK(rel_error(dtable, std::vector<double>(15, 0.0)) == 0);  // nothing was added before the throw
  Tensor floats = Tensor::zeros({4});
  CHECK_THROWS_WITH_AS(embedding_forward(floats, table, y), doctest::Contains("ids must be int32"), lt::Error);
  Tensor ok = Tensor::from_vector(std::vector<int32_t>{0, 1, 2, 3}, {4}), wrong = Tensor::zeros({4, 2});
  CHECK_THROWS_WITH_AS(embedding_forward(ok, table, wrong), doctest::Contains("need rows of shape [4, 3], got [4, 2]"),
                       lt::Error);
}
