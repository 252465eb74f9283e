// Checkpoint averaging: the parameters become the float64 mean of the
// checkpoints' values, and a checkpoint of another model is refused with its
// path and what differs.
#include <doctest/doctest.h>

#include "common/error.h"
#include "model/parameters.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

const std::map<std::string, std::string> kArchitecture = {{"heads", "2"}, {"attention", "linear"}, {"dropout", "0.1"}};

// A checkpoint of the two-parameter model below: random values, one untrained
// tensor (front-end statistics) shared by all, and an optimizer moment of its
// own.
Checkpoint model_checkpoint(const std::string& path, Rng& rng, const Tensor& statistics) {
  Checkpoint ck;
  ck.path = path;
  ck.metadata = kArchitecture;
  ck.metadata["lt.train.step"] = std::to_string(rng.integer(1, 1000));
  ck.tensors["w"] = rng.randn({3, 5});
  ck.tensors["b"] = rng.randn({7});
  ck.tensors["frontend.mean"] = statistics;
  ck.tensors["optimizer.exp_avg.w"] = rng.randn({3, 5});
  return ck;
}

Parameters loaded_from(const Checkpoint& ck) {
  Parameters p;
  p.add("w", {3, 5});
  p.add("b", {7});
  p.allocate(Device::cpu);
  for (size_t i = 0; i < p.size(); ++i) p.value(i).copy_from(ck.tensors.at(p.name(i)));
  return p;
}

void check_refused(const Checkpoint& first, const Checkpoint& other, std::initializer_list<std::string> words) {
  Parameters p = loaded_from(first);
  const std::vector<float> before = p.values().to_vector();
  try {
    average_checkpoints(p, first, {other}, kArchitecture);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.rfind(other.path + ": ", 0) == 0);
    for (const std::string& w : words) CHECK_MESSAGE(m.find(w) != std::string::npos, "missing '" << w << "'");
  }
  CHECK(p.values().to_vector() == before);  // nothing averaged
}

}  // namespace

TEST_CASE(
    "average_checkpoints sets each parameter to the float64 mean of the "
    "checkpoints' values") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const Tensor statistics = rng.randn({4});
  std::vector<Checkpoint> all;
  for (int i = 0; i < 4; ++i) all.push_back(model_checkpoint("ck" + std::to_string(i), rng, statistics));
  all[2].metadata["dropout"] = "0.3";  // a training setting: models trained with other dropout average
  for (size_t n = 2; n <= all.size(); ++n) {
    Parameters p = loaded_from(all[0]);
    average_checkpoints(p, all[0], std::vector<Checkpoint>(all.begin() + 1, all.begin() + n), kArchitecture);
    for (const std::string name : {"w", "b"}) {
      const std::vector<float> got = p.value(name).to_vector();
      for (size_t k = 0; k < got.size(); ++k) {
        long double sum = 0;
        for (size_t c = 0; c < n; ++c) sum += all[c].tensors.at(name).to_vector()[k];
        const double want = double(sum / n);
        CHECK(std::abs(got[k] - want) <= 1e-7 * std::abs(want) + 1e-30);
      }
    }
  }
}

TEST_CASE(
    "average_checkpoints refuses a checkpoint of another model, naming "
    "it and what differs") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const Tensor statistics = rng.randn({4});
  const Checkpoint first = model_checkpoint("first.safetensors", rng, statistics);
  Checkpoint other = model_checkpoint("other.safetensors", rng, statistics);
  {
    Checkpoint c = other;
    c.metadata["attention"] = "softmax";
    check_refused(first, c, {"first.safetensors", "attention", "softmax", "linear"});
  }
  {
    Checkpoint c = other;
    c.metadata.erase("heads");
    check_refused(first, c, {"heads"});
  }
  {
    Checkpoint c = other;
    c.tensors["w"] = rng.randn({5, 3});
    check_refused(first, c, {"'w'", "[5, 3]"});
  }
  {
    Checkpoint c = other;
    c.tensors.erase("b");
    check_refused(first, c, {"'b'"});
  }
  {
    Checkpoint c = other;
    c.tensors["frontend.mean"] = rng.randn({4});  // statistics of another training set
    check_refused(first, c, {"'frontend.mean'", "differs"});
  }
  {
    Checkpoint c = other;
    c.tensors.erase("frontend.mean");
    check_refused(first, c, {"'frontend.mean'", "lacks"});
  }
  {
    Checkpoint c = other;
    c.tensors["favor.projection"] = rng.randn({2, 2});
    check_refused(first, c, {"'favor.projection'"});
  }
}
