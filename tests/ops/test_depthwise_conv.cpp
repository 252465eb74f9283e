#include <algorithm>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {
// The definition in float64, term by term: y[b, t] = bias + sum_k w[k] x[b, t + k - P]
// over the taps that land inside the row, P = (K - 1) / 2 centred and K - 1
// causal; its gradients from the same terms.
struct ConvRef {
  std::vector<double> y, dx, dw, db;
};
ConvRef conv_ref(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& bias,
                 const std::vector<int32_t>& lengths, const std::vector<double>& dy, int64_t L, int64_t C, int64_t K,
                 bool causal) {
  const int64_t B = int64_t(lengths.size()), P = causal ? K - 1 : (K - 1) / 2;
  ConvRef r{std::vector<double>(x.size(), 0.0), std::vector<double>(x.size(), 0.0), std::vector<double>(C * K, 0.0),
            std::vector<double>(C, 0.0)};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lengths[size_t(b)]; ++t)
      for (int64_t c = 0; c < C; ++c) {
        const size_t out = size_t((b * L + t) * C + c);
        r.y[out] += bias[size_t(c)];
        r.db[size_t(c)] += dy[out];
        for (int64_t k = 0; k < K; ++k) {
          const int64_t u = t + k - P;
          if (u < 0 || u >= lengths[size_t(b)]) continue;
          const size_t in = size_t((b * L + u) * C + c), tap = size_t(c * K + k);
          r.y[out] += w[tap] * x[in];
          r.dx[in] += w[tap] * dy[out];
          r.dw[tap] += dy[out] * x[in];
        }
      }
  return r;
}
}  // namespace

TEST_CASE("depthwise convolution over positions, forward and backward, matches its float64 definition on padded rows") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t trial = 0; trial < 4; ++trial) {
    const bool causal = trial >= 2, big = trial % 2;  // big takes the OpenMP paths
    const int64_t B = rng.integer(1, 4), L = rng.integer(1, big ? 90 : 12), C = rng.integer(1, big ? 200 : 9);
    const int64_t K = causal ? rng.integer(1, big ? 15 : 6) : 2 * rng.integer(0, big ? 7 : 3) + 1;
    std::vector<int32_t> lengths;
    for (int64_t b = 0; b < B; ++b) lengths.push_back(int32_t(b == 0 ? L : rng.integer(0, L)));
    INFO("B " << B << " L " << L << " C " << C << " K " << K << " causal " << causal);
    Tensor x = rng.randn({B, L, C}), w = rng.randn({C, K}), bias = rng.randn({C}), dy = rng.randn({B, L, C});
    Tensor len = Tensor::from_vector(lengths, {B});
    Tensor y = rng.randn({B, L, C}), dx = rng.randn({B, L, C});
    const Tensor dw0 = rng.randn({C, K}), db0 = rng.randn({C});
    Tensor dw = Tensor::empty({C, K}), db = Tensor::empty({C});
    dw.copy_from(dw0);
    db.copy_from(db0);
    depthwise_conv_forward(x, w, bias, len, causal, y);
    depthwise_conv_backward(x, w, len, causal, dy, dx, dw, db);
    ConvRef ref = conv_ref(to_double(x), to_double(w), to_double(bias), lengths, to_double(dy), L, C, K, causal);
    const std::vector<double> w0 = to_double(dw0), b0 = to_double(db0);
    for (size_t i = 0; i < ref.dw.size(); ++i) ref.dw[i] += w0[i];  // parameter gradients accumulate
    for (size_t i = 0; i < ref.db.size(); ++i) ref.db[i] += b0[i];
    CHECK(rel_error(y, ref.y) < 1e-5);
    CHECK(rel_error(dx, ref.dx) < 1e-5);
    CHECK(rel_error(dw, ref.dw) < 1e-5);
    CHECK(rel_error(db, ref.db) < 1e-5);
    SUBCASE("without lengths every row is whole") {
      depthwise_conv_forward(x, w, bias, Tensor(), causal, y);
      const ConvRef whole = conv_ref(to_double(x), to_double(w), to_double(bias), std::vector<int32_t>(size_t(B), int32_t(L)),
                                     to_double(dy), L, C, K, causal);
      CHECK(rel_error(y, whole.y) < 1e-5);
    }
  }
}

TEST_CASE("a causal depthwise convolution continued chunk by chunk equals it over the whole sequence") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  for (int64_t big : {0, 1}) {
    const int64_t B = rng.integer(1, 3), L = rng.integer(1, big ? 80 : 14), C = rng.integer(1, big ? 300 : 7);
    const int64_t K = rng.integer(1, big ? 12 : 6);
    INFO("B " << B << " L " << L << " C " << C << " K " << K);
    Tensor x = rng.randn({B, L, C}), w = rng.randn({C, K}), bias = rng.randn({C});
    const ConvRef ref = conv_ref(to_double(x), to_double(w), to_double(bias), std::vector<int32_t>(size_t(B), int32_t(L)),
                                 std::vector<double>(size_t(B * L * C), 0.0), L, C, K, /*causal=*/true);
    // Chunks of random lengths (some shorter than the window) from a zero window.
    Tensor window = Tensor::zeros({B, K - 1, C}), y = Tensor::empty({B * L, C});
    for (int64_t t0 = 0; t0 < L;) {
      const int64_t T = std::min(L - t0, rng.integer(1, K + 2));
      Tensor xc = Tensor::empty({B, T, C}), yc = rng.randn({B, T, C});
      for (int64_t b = 0; b < B; ++b)
        xc.reshape({B * T, C}).rows(b * T, (b + 1) * T).copy_from(x.reshape({B * L, C}).rows(b * L + t0, b * L + t0 + T));
      depthwise_conv_continue(xc, w, bias, window, yc);
      for (int64_t b = 0; b < B; ++b)
        y.rows(b * L + t0, b * L + t0 + T).copy_from(yc.reshape({B * T, C}).rows(b * T, (b + 1) * T));
      t0 += T;
    }
    CHECK(rel_error(y, ref.y) < 1e-5);
    // The window ends as the last K - 1 inputs, zeros before the sequence.
    const std::vector<double> xs = to_double(x), ws = to_double(window);
    double worst = 0.0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < K - 1; ++j)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t u = L - (K - 1) + j;
          const double want = u >= 0 ? xs[size_t((b * L + u) * C + c)] : 0.0;
          worst = std::max(worst, std::abs(ws[size_t((b * (K - 1) + j) * C + c)] - want));
        }
    CHECK(worst == 0.0);
  }
}

TEST_CASE("depthwise convolution refuses even centred kernels and mismatched shapes") {
  Tensor x = Tensor::zeros({1, 4, 3}), y = Tensor::zeros({1, 4, 3}), b = Tensor::zeros({3});
  CHECK_THROWS_WITH_AS(depthwise_conv_forward(x, Tensor::zeros({3, 2}), b, Tensor(), false, y),
                       doctest::Contains("K odd"), Error);
  CHECK_NOTHROW(depthwise_conv_forward(x, Tensor::zeros({3, 2}), b, Tensor(), true, y));
  CHECK_THROWS_WITH_AS(depthwise_conv_forward(x, Tensor::zeros({2, 3}), b, Tensor(), false, y),
                       doctest::Contains("w must be [3, K]"), Error);
  Tensor window = Tensor::zeros({1, 2, 3});
  CHECK_THROWS_WITH_AS(depthwise_conv_continue(x, Tensor::zeros({3, 2}), b, window, y),
                       doctest::Contains("window must be [1, 1, 3]"), Error);
}
