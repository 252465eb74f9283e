// Shared test helpers: fresh random inputs (the seed is printed on failure),
// float64 reference buffers, a normalised error, and a finite-difference check.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "backend/device.h"
#include "core/tensor.h"
#include "model/transformer.h"

namespace lt::test {

// A fresh seed per call, reported through doctest's INFO by the caller;
// LT_TEST_SEED=<seed> replays a reported one (every call then returns it).
// How one forward pass runs: train (dropout on) and its seed, fp32.
inline ForwardOptions pass(bool train, uint64_t seed) {
  ForwardOptions o;
  o.train = train;
  o.seed = seed;
  return o;
}

// The CPU on one thread while in scope (lt-train's -t 1: runs compare bit
// for bit), and back to what it was.
struct OneThread {
  int before = num_threads();
  OneThread() { set_num_threads(1); }
  ~OneThread() { set_num_threads(before); }
};

inline uint64_t fresh_seed() {
  if (const char* replay = std::getenv("LT_TEST_SEED")) return std::strtoull(replay, nullptr, 10);
  static std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  double uniform(double lo = -1, double hi = 1) { return std::uniform_real_distribution<double>(lo, hi)(gen); }
  double normal() { return std::normal_distribution<double>(0, 1)(gen); }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); }
  std::vector<float> normals(int64_t n, double scale = 1) {
    std::vector<float> v(n);
    for (auto& x : v) x = float(normal() * scale);
    return v;
  }
  Tensor randn(const Shape& shape, double scale = 1, Device d = Device::cpu) {
    return Tensor::from_vector(normals(shape_numel(shape), scale), shape, d);
  }
};

inline std::vector<double> to_double(const Tensor& t) {
  std::vector<float> f = t.to_vector();
  return std::vector<double>(f.begin(), f.end());
}

// ||got - want|| / max(||want||, tiny): the normalised error of test-backend-ops.
inline double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = double(got[i]) - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}
inline double rel_error(const Tensor& got, const std::vector<double>& want) {
  return rel_error(got.to_vector(), want);
}
inline double rel_error(const Tensor& got, const Tensor& want) {
  return rel_error(got.to_vector(), to_double(want));
}

// Central differences of a scalar loss f with respect to every element of x
// (float32 storage, so h is large and the tolerance loose: about 1e-2).
inline std::vector<double> numeric_grad(Tensor& x, const std::function<double()>& f, double h = 1e-2) {
  std::vector<float> v = x.to_vector();
  std::vector<double> g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    float keep = v[i];
    v[i] = float(keep + h);
    x.copy_from(Tensor::from_vector(v, x.shape()));
    double up = f();
    v[i] = float(keep - h);
    x.copy_from(Tensor::from_vector(v, x.shape()));
    double down = f();
    v[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  x.copy_from(Tensor::from_vector(v, x.shape()));
  return g;
}

// A whole model's gradient against central differences of its loss at
// chosen coordinates of its flat parameter tensor. A ReLU or one of a loss's
// clamps can switch inside [x - h, x + h]: there the difference estimates no
// derivative, and two step sizes disagree; such probes are counted as kinks
// and left out. Small steps make them rare (losses are summed in float64).
struct GradientProbes {
  std::vector<float> analytic;
  std::vector<double> numeric;
  int kinks = 0;
  void probe(Tensor& values, const std::vector<float>& grads, int64_t offset, const std::function<double()>& loss) {
    std::vector<float> v = values.to_vector();
    const float keep = v[offset];
    auto central = [&](double h) {
      v[offset] = float(keep + h);
      values.copy_from(Tensor::from_vector(v, values.shape()));
      const double up = loss();
      v[offset] = float(keep - h);
      values.copy_from(Tensor::from_vector(v, values.shape()));
      const double down = loss();
      v[offset] = keep;
      values.copy_from(Tensor::from_vector(v, values.shape()));
      return (up - down) / (2 * h);
    };
    const double d1 = central(1e-3), d2 = central(5e-4);
    if (std::abs(d1 - d2) > 0.05 * std::abs(d2) + 1e-3) {
      ++kinks;
      return;
    }
    analytic.push_back(grads[offset]);
    numeric.push_back(d2);
  }
};

// x rounded to the nearest value with 8 significant bits, ties to even (bf16),
// computed apart from lt's own rounding.
inline double bf16_round(double f) {
  if (f == 0) return 0;
  int e;
  const double m = std::frexp(f, &e);  // |m| in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8);
}

// sum(w * y) in float64: a random projection turns any output into a scalar loss.
inline double dot(const Tensor& y, const std::vector<float>& w) {
  std::vector<float> v = y.to_vector();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += double(v[i]) * w[i];
  return s;
}

// CUDA tests call this first: it prints the ctest skip marker and returns
// false without a usable GPU (ctest reports the test as skipped, not passed).
inline bool cuda_or_skip() {
  std::string why = cuda_unavailable_reason();
  if (why.empty()) return true;
  std::printf("LT-SKIP: %s\n", why.c_str());
  return false;
}

}  // namespace lt::test
