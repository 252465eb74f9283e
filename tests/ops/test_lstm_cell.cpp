// The LSTM cell op of the Bi-LSTM encoder: one step of a padded batch
// against torch.nn.LSTM's equations in float64, and its gradient against
// central differences of those equations.
#include <cmath>

#include "ops/ops.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// One unit j of row r in float64: (c, h) from the pre-activations z (x and
// recurrent parts summed) and the previous cell state.
std::pair<double, double> cell(const std::vector<double>& z, double cp, int64_t r, int64_t j, int64_t H) {
  const double* a = z.data() + r * 4 * H;
  const double i = sigmoid(a[j]), f = sigmoid(a[H + j]), g = std::tanh(a[2 * H + j]), o = sigmoid(a[3 * H + j]);
  const double c = f * cp + i * g;
  return {c, o * std::tanh(c)};
}

struct Step {
  int64_t B, H, W, first, t;
  Tensor gates, rec, c_prev, lengths;
  // The gates' pre-activations in float64: the input part plus the recurrent one.
  std::vector<double> preactivations() const {
    std::vector<double> z = to_double(gates);
    const std::vector<double> r = to_double(rec);
    for (size_t i = 0; i < z.size(); ++i) z[i] += r[i];
    return z;
  }
};

Step random_step(Rng& rng) {
  Step s;
  s.B = rng.integer(2, 6), s.H = rng.integer(1, 40), s.W = s.H + rng.integer(0, 20),
  s.first = rng.integer(0, s.W - s.H);
  s.t = rng.integer(0, 5);
  s.gates = rng.randn({s.B, 4 * s.H}, 1.5), s.rec = rng.randn({s.B, 4 * s.H}, 1.5), s.c_prev = rng.randn({s.B, s.H});
  std::vector<int32_t> len(s.B);
  for (auto& l : len) l = int32_t(rng.integer(s.t + 1, s.t + 9));
  len[rng.integer(0, s.B - 1)] = int32_t(s.t);  // a row whose padding starts at this step
  s.lengths = Tensor::from_vector(len, {s.B});
  return s;
}

}  // namespace

TEST_CASE("lstm_cell_forward is nn.LSTM's cell in float64, padded rows zero, h also in its columns of out") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Step s = random_step(rng);
  INFO("B " << s.B << " H " << s.H << " W " << s.W << " first " << s.first);
  const std::vector<double> z = s.preactivations(), cp = to_double(s.c_prev);
  const std::vector<float> out_before = rng.normals(s.B * s.W);
  Tensor gates = s.gates.clone(), c = Tensor::empty({s.B, s.H}), h = Tensor::empty({s.B, s.H});
  Tensor out = Tensor::from_vector(out_before, {s.B, s.W});
  lstm_cell_forward(gates, s.rec, s.c_prev, s.lengths, s.t, c, h, out, s.first);

  const std::vector<int32_t> len = s.lengths.to_vector_i32();
  std::vector<double> want_c(s.B * s.H), want_h(s.B * s.H), want_out(out_before.begin(), out_before.end());
  std::vector<double> want_gates = to_double(s.gates);
  for (int64_t r = 0; r < s.B; ++r)
    for (int64_t j = 0; j < s.H; ++j) {
      const bool real = s.t < len[r];
      const auto [cv, hv] = real ? cell(z, cp[r * s.H + j], r, j, s.H) : std::pair<double, double>{0, 0};
      want_c[r * s.H + j] = cv, want_h[r * s.H + j] = hv, want_out[r * s.W + s.first + j] = hv;
      for (int q = 0; q < 4 && real; ++q) {
        const double v = z[r * 4 * s.H + q * s.H + j];
        want_gates[r * 4 * s.H + q * s.H + j] = q == 2 ? std::tanh(v) : sigmoid(v);
      }
    }
  CHECK(rel_error(c, want_c) < 2e-6);
  CHECK(rel_error(h, want_h) < 2e-6);
  CHECK(rel_error(out, want_out) < 2e-6);  // the other columns untouched
  CHECK(rel_error(gates, want_gates) < 2e-6);
}

TEST_CASE("lstm_cell_backward matches central differences of the float64 cell, padded rows zero") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  Step s = random_step(rng);
  INFO("B " << s.B << " H " << s.H << " W " << s.W << " first " << s.first);
  // A loss sum(wh * h) + sum(wc * c): its dh splits into the recurrent dh and
  // the layer output's columns of dout; wc is the next step's dc.
  const std::vector<float> dh_rec = rng.normals(s.B * s.H), dc_next = rng.normals(s.B * s.H);
  const std::vector<float> dout_v = rng.normals(s.B * s.W);
  const std::vector<int32_t> len = s.lengths.to_vector_i32();
  const std::vector<double> z = s.preactivations(), cp = to_double(s.c_prev);
  auto loss = [&](const std::vector<double>& zz, const std::vector<double>& cc) {
    double sum = 0;
    for (int64_t r = 0; r < s.B; ++r)
      for (int64_t j = 0; j < s.H && s.t < len[r]; ++j) {
        const auto [cv, hv] = cell(zz, cc[r * s.H + j], r, j, s.H);
        sum += hv * (dh_rec[r * s.H + j] + dout_v[r * s.W + s.first + j]) + cv * dc_next[r * s.H + j];
      }
    return sum;
  };
  const double eps = 1e-6;
  std::vector<double> want_dz(z.size()), want_dcp(cp.size());
  for (size_t i = 0; i < z.size(); ++i) {
    std::vector<double> up = z, down = z;
    up[i] += eps, down[i] -= eps;
    want_dz[i] = (loss(up, cp) - loss(down, cp)) / (2 * eps);
  }
  for (size_t i = 0; i < cp.size(); ++i) {
    std::vector<double> up = cp, down = cp;
    up[i] += eps, down[i] -= eps;
    want_dcp[i] = (loss(z, up) - loss(z, down)) / (2 * eps);
  }

  Tensor gates = s.gates.clone(), c = Tensor::empty({s.B, s.H}), h = Tensor::empty({s.B, s.H});
  Tensor out = Tensor::empty({s.B, s.W});
  lstm_cell_forward(gates, s.rec, s.c_prev, s.lengths, s.t, c, h, out, s.first);
  Tensor dh = Tensor::from_vector(dh_rec, {s.B, s.H}), dout = Tensor::from_vector(dout_v, {s.B, s.W});
  Tensor dc = Tensor::from_vector(dc_next, {s.B, s.H}), dgates = rng.randn({s.B, 4 * s.H});
  lstm_cell_backward(gates, c, s.c_prev, dh, dout, s.first, s.lengths, s.t, dc, dgates);
  CHECK(rel_error(dgates, want_dz) < 1e-5);
  CHECK(rel_error(dc, want_dcp) < 1e-5);
}

TEST_CASE("lstm cell ops refuse shapes that do not fit, naming them") {
  Tensor gates = Tensor::zeros({2, 8}), rec = Tensor::zeros({2, 8}), c = Tensor::zeros({2, 2}),
         h = Tensor::zeros({2, 2});
  Tensor lengths = Tensor::from_vector(std::vector<int32_t>{1, 1}, {2}), out = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH_AS(lstm_cell_forward(gates, rec, c, lengths, 0, c, h, out, 2), doctest::Contains("columns 2..4"),
                       lt::Error);
  Tensor odd = Tensor::zeros({2, 7});
  CHECK_THROWS_WITH_AS(lstm_cell_forward(odd, rec, c, lengths, 0, c, h, out, 0), doctest::Contains("[B, 4H]"),
                       lt::Error);
  Tensor float_lengths = Tensor::zeros({2});
  CHECK_THROWS_WITH_AS(lstm_cell_backward(gates, c, c, h, out, 0, float_lengths, 0, c, gates),
                       doctest::Contains("int32"), lt::Error);
}
