#include <cmath>
#include <functional>

#include "ops/ops.h"
#include "ops/simd_math.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
using Forward = void (*)(const Tensor&, Tensor&);
using Backward = void (*)(const Tensor&, const Tensor&, Tensor&);

struct Activation {
  const char* name;
  Forward forward;
  Backward backward;
  std::function<double(double)> f, fprime;  // float64 references
};

const double kInvSqrt2 = 1 / std::sqrt(2.0), kInvSqrt2Pi = 1 / std::sqrt(2 * M_PI);

std::vector<Activation> activations() {
  return {
      {"relu", relu_forward, relu_backward, [](double v) { return v > 0 ? v : 0; },
       [](double v) { return v > 0 ? 1.0 : 0.0; }},
      {"gelu", gelu_forward, gelu_backward, [](double v) { return 0.5 * v * std::erfc(-v * kInvSqrt2); },
       [](double v) { return 0.5 * std::erfc(-v * kInvSqrt2) + v * kInvSqrt2Pi * std::exp(-0.5 * v * v); }},
      {"elu_plus_one", elu_plus_one_forward, elu_plus_one_backward,
       [](double v) { return v > 0 ? v + 1 : std::exp(v); }, [](double v) { return v > 0 ? 1.0 : std::exp(v); }},
  };
}

// Away from relu's kink, where a central difference straddles it.
std::vector<float> off_zero(std::vector<float> v) {
  for (auto& x : v)
    if (std::fabs(x) < 0.05f) x += x < 0 ? -0.05f : 0.05f;
  return v;
}
}  // namespace

TEST_CASE("activations forward and backward match float64 references") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (const Activation& a : activations()) {
    INFO(a.name);
    for (int64_t max_n : {99, 70000}) {  // the second size takes the OpenMP path
      const int64_t n = rng.integer(1, max_n);
      Tensor x = rng.randn({n}, 4.0), dy = rng.randn({n});
      Tensor y = Tensor::empty({n}), dx = Tensor::empty({n});
      a.forward(x, y);
      a.backward(x, dy, dx);
      auto xv = to_double(x), dyv = to_double(dy);
      std::vector<double> y_ref(n), dx_ref(n);
      for (int64_t i = 0; i < n; ++i) {
        y_ref[i] = a.f(xv[i]);
        dx_ref[i] = a.fprime(xv[i]) * dyv[i];
      }
      CHECK(rel_error(y, y_ref) < 1e-5);
      CHECK(rel_error(dx, dx_ref) < 1e-5);
    }
  }
}

TEST_CASE("activations backward matches finite differences") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (const Activation& a : activations()) {
    INFO(a.name);
    const int64_t rows = rng.integer(1, 4), C = rng.integer(1, 13);
    Tensor x = Tensor::from_vector(off_zero(rng.normals(rows * C, 2.0)), {rows, C});
    std::vector<float> w = rng.normals(rows * C);
    Tensor y = Tensor::empty({rows, C}), dx = Tensor::empty({rows, C});
    auto loss = [&] {
      a.forward(x, y);
      return dot(y, w);
    };
    a.backward(x, Tensor::from_vector(w, {rows, C}), dx);
    CHECK(rel_error(dx, numeric_grad(x, loss, 1e-3)) < 1e-3);
  }
}

TEST_CASE("activations work in place and reject mismatched shapes") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Tensor x = rng.randn({5, 7});
  Tensor y = Tensor::empty({5, 7});
  gelu_forward(x, y);
  gelu_forward(x, x);
  CHECK(rel_error(x, y) == 0);
  Tensor bad = Tensor::empty({7, 5});
  CHECK_THROWS_WITH_AS(relu_forward(x, bad), doctest::Contains("x [5, 7] and y [7, 5] differ"), lt::Error);
}

TEST_CASE("the vectorised exp is within 2 ulp of libm's, 0 below -87.3, and keeps NaN (so a diverged loss shows)") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int i = 0; i < 10000; ++i) {
    const float x = float(rng.uniform(-87, 88));
    const double want = std::exp(double(x));
    CHECK(std::abs(double(simd_math::exp(x)) - want) <= 2.5e-7 * want);
  }
  CHECK(simd_math::exp(-100.f) == 0.f);
  CHECK(simd_math::exp(-INFINITY) == 0.f);
  CHECK(std::isnan(simd_math::exp(NAN)));
  CHECK(std::isnan(simd_math::exp(-NAN)));
  // softmax and elu+1 over a row holding a NaN give NaN, not a finite value.
  Tensor x = Tensor::from_vector(std::vector<float>{0.5f, NAN, -1.f}, {1, 3}), y = Tensor::empty({1, 3});
  softmax_forward(x, y);
  CHECK(std::isnan(y.to_vector()[0]));
  elu_plus_one_forward(x, y);
  CHECK(std::isnan(y.to_vector()[1]));
}

TEST_CASE("the vectorised sigmoid and tanh are within a few ulp of float64's, saturate, and keep NaN") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int i = 0; i < 20000; ++i) {
    // Half the draws small, where tanh's result is small and must keep its low bits.
    const float x = float(i % 2 ? rng.uniform(-30, 30) : rng.uniform(-1, 1) * std::pow(10.0, rng.uniform(-6, 0)));
    INFO("x " << x);
    const double s = 1 / (1 + std::exp(-double(x))), t = std::tanh(double(x));
    CHECK(std::abs(double(simd_math::sigmoid(x)) - s) <= 4e-7 * s);
    CHECK(std::abs(double(simd_math::tanh(x)) - t) <= 4e-7 * std::abs(t));
  }
  CHECK(simd_math::sigmoid(-200.f) < 1e-38f);  // e^-x saturates at e^88
  CHECK(simd_math::sigmoid(200.f) == 1.f);
  CHECK(simd_math::tanh(200.f) == 1.f);
  CHECK(simd_math::tanh(-200.f) == -1.f);
  CHECK(simd_math::tanh(0.f) == 0.f);
  CHECK(std::isnan(simd_math::sigmoid(NAN)));
  CHECK(std::isnan(simd_math::tanh(NAN)));
}
