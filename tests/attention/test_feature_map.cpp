#include <cmath>

#include "attention/feature_map.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
double elu_plus_one(double x) { return x > 0 ? x + 1 : std::exp(x); }
double relu(double x) { return x > 0 ? x : 0; }
}  // namespace

TEST_CASE("feature map elu is elu plus one as in eq. 7 with its gradient") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  auto phi = make_feature_map("elu");
  CHECK(phi->name() == "elu");
  const int64_t N = rng.integer(1, 3), L = rng.integer(1, 9), H = rng.integer(1, 3), E = rng.integer(1, 13);
  CHECK(phi->feature_dim(E) == E);
  Tensor x = rng.randn({N, L, H, E}, 2), y = Tensor::empty({N, L, H, phi->feature_dim(E)});
  phi->forward(x, y);
  std::vector<double> ref = to_double(x);
  for (double& v : ref) v = elu_plus_one(v);
  CHECK(rel_error(y, ref) < 1e-6);
  for (float v : y.to_vector()) CHECK(v > 0.f);

  std::vector<float> w = rng.normals(x.numel());
  Tensor dy = Tensor::from_vector(w, y.shape()), dx = Tensor::empty(x.shape());
  phi->backward(x, dy, dx);
  auto loss = [&] {
    phi->forward(x, y);
    return dot(y, w);
  };
  CHECK(rel_error(dx, numeric_grad(x, loss, 1e-3)) < 1e-2);
}

TEST_CASE("feature map relu and its gradient") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  auto phi = make_feature_map("relu");
  CHECK(phi->name() == "relu");
  const int64_t rows = rng.integer(1, 40), E = rng.integer(1, 13);
  Tensor x = rng.randn({rows, E}), y = Tensor::empty({rows, phi->feature_dim(E)});
  phi->forward(x, y);
  std::vector<double> xv = to_double(x), ref(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) ref[i] = relu(xv[i]);
  CHECK(rel_error(y, ref) < 1e-7);

  Tensor dy = rng.randn(x.shape()), dx = Tensor::empty(x.shape());
  phi->backward(x, dy, dx);
  std::vector<double> dyv = to_double(dy);
  for (size_t i = 0; i < xv.size(); ++i) ref[i] = xv[i] > 0 ? dyv[i] : 0;
  CHECK(rel_error(dx, ref) < 1e-7);
}

TEST_CASE("make_feature_map rejects unknown names and lists the known ones") {
  CHECK_THROWS_WITH_AS(make_feature_map("performer"),
                       doctest::Contains("unknown feature map 'performer' (known: elu, relu, favor)"), lt::Error);
}

TEST_CASE("elementwise maps say which function they are, have no tensors, and keep the width") {
  CHECK(make_feature_map("elu")->elementwise() == Elementwise::elu_plus_one);
  CHECK(make_feature_map("relu")->elementwise() == Elementwise::relu);
  CHECK(make_feature_map("elu")->tensors().empty());
  FeatureMapOptions o;
  o.head_dim = 8;
  o.features = 8;
  CHECK(make_feature_map("relu", o)->feature_dim(8) == 8);
  o.features = 16;
  CHECK_THROWS_WITH_AS(make_feature_map("elu", o),
                       doctest::Contains("feature map elu keeps the head dimension; it cannot give 16 features"),
                       lt::Error);
}

TEST_CASE("feature maps reject outputs of the wrong shape") {
  auto phi = make_feature_map("elu");
  Tensor x = Tensor::zeros({2, 3, 4}), y = Tensor::zeros({2, 3, 5});
  CHECK_THROWS_WITH_AS(phi->forward(x, y), doctest::Contains("expected shape [2, 3, 4], got [2, 3, 5]"), lt::Error);
}
