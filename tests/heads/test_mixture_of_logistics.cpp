#include <algorithm>
#include <cmath>

#include "heads/heads.h"
#include "test_util.h"

using namespace lt;
using namespace lt::test;

namespace {

// Which of the reference's cases a (row, component) fell into.
struct BranchCounts {
  int low_edge = 0, high_edge = 0, bin_mass = 0, density = 0, clamped = 0;
};

double softplus_torch(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }  // F.softplus
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// A direct transcription of discretized_mix_logistic_loss (reduce=False) for
// one position, in float64: every quantity computed, then selected by masks.
double reference_nll(const double* p, int64_t K, int byte, BranchCounts* counts = nullptr) {
  const double y = byte / 255.0 * 2 - 1;
  double lse_logits = -INFINITY;
  for (int64_t k = 0; k < K; ++k) lse_logits = std::max(lse_logits, p[k]);
  double s = 0;
  for (int64_t k = 0; k < K; ++k) s += std::exp(p[k] - lse_logits);
  lse_logits += std::log(s);

  std::vector<double> log_probs(K);
  for (int64_t k = 0; k < K; ++k) {
    const double means = p[K + k], log_scales = std::max(p[2 * K + k], -7.0);
    const double centered_y = y - means, inv_stdv = std::exp(-log_scales);
    const double plus_in = inv_stdv * (centered_y + 1. / 255), cdf_plus = sigmoid(plus_in);
    const double min_in = inv_stdv * (centered_y - 1. / 255), cdf_min = sigmoid(min_in);
    const double log_cdf_plus = plus_in - softplus_torch(plus_in);
    const double log_one_minus_cdf_min = -softplus_torch(min_in);
    const double cdf_delta = cdf_plus - cdf_min;
    const double mid_in = inv_stdv * centered_y;
    const double log_pdf_mid = mid_in - log_scales - 2. * softplus_torch(mid_in);
    const double inner_inner_cond = cdf_delta > 1e-5;
    const double inner_inner_out = inner_inner_cond * std::log(std::max(cdf_delta, 1e-12)) +
                                   (1. - inner_inner_cond) * (log_pdf_mid - std::log(127.5));
    const double inner_cond = y > 0.999;
    const double inner_out = inner_cond * log_one_minus_cdf_min + (1. - inner_cond) * inner_inner_out;
    const double cond = y < -0.999;
    log_probs[k] = cond * log_cdf_plus + (1. - cond) * inner_out + p[k] - lse_logits;
    if (counts) {
      if (cond) counts->low_edge++;
      else if (inner_cond) counts->high_edge++;
      else if (inner_inner_cond) counts->bin_mass++;
      else counts->density++;
      if (p[2 * K + k] < -7) counts->clamped++;
    }
  }
  double m = *std::max_element(log_probs.begin(), log_probs.end()), t = 0;
  for (double l : log_probs) t += std::exp(l - m);
  return -(m + std::log(t));
}

double bin_centre(int byte) { return byte / 255.0 * 2 - 1; }

// Rows that between them take every branch: byte 0, byte 255, all components
// far in the tail with tiny scales (density fallback), clamped log-scales
// near the target, and ordinary random rows.
void make_rows(Rng& rng, int64_t R, int64_t K, std::vector<float>& params, std::vector<int32_t>& bytes) {
  params.resize(R * 3 * K);
  bytes.resize(R);
  for (int64_t r = 0; r < R; ++r) {
    float* p = params.data() + r * 3 * K;
    int kind = int(r % 5);
    int byte = kind == 0 ? 0 : kind == 1 ? 255 : int(rng.integer(kind == 4 ? 0 : 40, kind == 4 ? 255 : 215));
    bytes[r] = byte;
    for (int64_t k = 0; k < K; ++k) {
      p[k] = float(rng.normal());
      if (kind == 2) {  // 10..30 bins away, scale below 1/400 of the range
        double away = rng.integer(10, 30) * 2 / 255.0 * (rng.uniform() < 0 ? -1 : 1);
        p[K + k] = float(bin_centre(byte) + away);
        p[2 * K + k] = float(rng.uniform(-6.9, -6.0));
      } else if (kind == 3) {  // clamped scale, mean within two bins
        p[K + k] = float(bin_centre(byte) + rng.uniform(-2, 2) * 2 / 255.0);
        p[2 * K + k] = float(rng.uniform(-9, -7.05));
      } else {
        p[K + k] = float(rng.uniform(-1, 1));
        p[2 * K + k] = float(rng.uniform(-4.5, 0.5));
      }
    }
  }
}

}  // namespace

TEST_CASE("mixture of logistics loss matches a float64 transcription of the reference") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t N = rng.integer(1, 3), L = rng.integer(10, 40), K = rng.integer(1, 6), R = N * L;
  std::vector<float> pv;
  std::vector<int32_t> bv;
  make_rows(rng, R, K, pv, bv);
  Tensor params = Tensor::from_vector(pv, {N, L, 3 * K}), bytes = Tensor::from_vector(bv, {N, L});
  Tensor nll = Tensor::empty({N, L});
  const double mean = mol_loss_forward(params, bytes, nll);

  BranchCounts counts;
  std::vector<double> ref(R), pd(pv.begin(), pv.end());
  double ref_mean = 0;
  for (int64_t r = 0; r < R; ++r) {
    ref[r] = reference_nll(pd.data() + r * 3 * K, K, bv[r], &counts);
    ref_mean += ref[r] / R;
  }
  CHECK(counts.low_edge > 0);
  CHECK(counts.high_edge > 0);
  CHECK(counts.bin_mass > 0);
  CHECK(counts.density > 0);
  CHECK(counts.clamped > 0);
  CHECK(rel_error(nll, ref) < 1e-5);
  CHECK(std::abs(mean - ref_mean) < 1e-9 * std::abs(ref_mean) + 1e-6);
}

TEST_CASE("mixture of logistics gradient matches finite differences of the reference") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t R = rng.integer(10, 30), K = rng.integer(1, 5);
  std::vector<float> pv;
  std::vector<int32_t> bv;
  make_rows(rng, R, K, pv, bv);
  Tensor params = Tensor::from_vector(pv, {R, 3 * K}), bytes = Tensor::from_vector(bv, {R});
  Tensor dparams = rng.randn({R, 3 * K});  // overwritten
  const float scale = float(rng.uniform(0.1, 2));
  mol_loss_backward(params, bytes, scale, dparams);
  std::vector<float> got = dparams.to_vector();

  // Row by row: each row's gradient against central differences (h = 1e-7)
  // of the float64 reference, so small rows are not hidden by large ones.
  const double h = 1e-7;
  for (int64_t r = 0; r < R; ++r) {
    std::vector<double> p(pv.begin() + r * 3 * K, pv.begin() + (r + 1) * 3 * K), want(3 * K);
    for (int64_t i = 0; i < 3 * K; ++i) {
      const double keep = p[i];
      p[i] = keep + h;
      const double up = reference_nll(p.data(), K, bv[r]);
      p[i] = keep - h;
      const double down = reference_nll(p.data(), K, bv[r]);
      p[i] = keep;
      want[i] = scale * (up - down) / (2 * h);
    }
    std::vector<float> row(got.begin() + r * 3 * K, got.begin() + (r + 1) * 3 * K);
    INFO("row " << r << " byte " << bv[r]);
    // float32 arithmetic: about 1e-6 typically, 1.3e-5 seen on a row with cancellation.
    CHECK(rel_error(row, want) < 5e-5);
    for (int64_t k = 0; k < K; ++k)  // torch.clamp passes no gradient below the clamp
      if (p[2 * K + k] < -7) CHECK(row[2 * K + k] == 0.f);
  }
}

TEST_CASE("mixture of logistics samples follow the loss's own distribution") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  // Three components; the third has a log-scale below the clamp and its mean
  // 0.0005 below a bin edge, so the clamped scale splits it over two bins.
  const int64_t K = 3;
  const int edge_byte = int(rng.integer(60, 200));
  std::vector<float> row = {float(rng.uniform(-0.5, 0.5)), float(rng.uniform(-0.5, 0.5)), 0.2f,
                            float(rng.uniform(-0.6, -0.2)), float(rng.uniform(0.2, 0.6)),
                            float(bin_centre(edge_byte) + 1 / 255.0 - 0.0005),
                            float(rng.uniform(-3.5, -2.5)), float(rng.uniform(-3.5, -2.5)), -9.f};
  const int64_t B = int64_t(1) << 20;
  std::vector<float> many(B * 3 * K);
  for (int64_t b = 0; b < B; ++b) std::copy(row.begin(), row.end(), many.begin() + b * 3 * K);
  Tensor out = Tensor::empty({B}, Device::cpu, DType::i32);
  mol_sample(Tensor::from_vector(many, {B, 3 * K}), rng.gen(), rng.integer(0, 3000), out);

  std::vector<double> freq(256, 0.0);
  int64_t outside = 0;
  for (int32_t v : out.to_vector_i32()) {
    if (v < 0 || v > 255) ++outside;
    else freq[v] += 1.0 / B;
  }
  REQUIRE(outside == 0);
  // p(byte) = exp(-nll) for all 256 bytes from the loss itself.
  std::vector<float> rows256(256 * 3 * K);
  std::vector<int32_t> all_bytes(256);
  for (int j = 0; j < 256; ++j) {
    std::copy(row.begin(), row.end(), rows256.begin() + j * 3 * K);
    all_bytes[j] = j;
  }
  Tensor nll = Tensor::empty({256});
  mol_loss_forward(Tensor::from_vector(rows256, {256, 3 * K}), Tensor::from_vector(all_bytes, {256}), nll);
  std::vector<float> nv = nll.to_vector();
  double total = 0, tv = 0;
  for (int j = 0; j < 256; ++j) {
    total += std::exp(-double(nv[j]));
    tv += std::abs(freq[j] - std::exp(-double(nv[j]))) / 2;
  }
  CHECK(std::abs(total - 1) < 1e-3);
  CHECK(tv < 0.01);
}

TEST_CASE("mixture of logistics sampling is a function of seed and step and row") {
  uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  Rng rng(seed);
  const int64_t B = 64, K = 4;
  std::vector<float> pv = rng.normals(B * 3 * K);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k) pv[b * 3 * K + 2 * K + k] = float(rng.uniform(-1.5, -0.5));
  Tensor params = Tensor::from_vector(pv, {B, 3 * K});
  Tensor a = Tensor::empty({B}, Device::cpu, DType::i32), b = a.clone(), c = a.clone(), d = a.clone();
  const uint64_t s = rng.gen();
  mol_sample(params, s, 7, a);
  mol_sample(params, s, 7, b);
  mol_sample(params, s, 8, c);
  mol_sample(params, s + 1, 7, d);
  auto av = a.to_vector_i32(), bv = b.to_vector_i32(), cv = c.to_vector_i32(), dv = d.to_vector_i32();
  CHECK(av == bv);
  int differ_step = 0, differ_seed = 0;
  for (int64_t i = 0; i < B; ++i) {
    differ_step += av[i] != cv[i];
    differ_seed += av[i] != dv[i];
  }
  CHECK(differ_step > B / 2);
  CHECK(differ_seed > B / 2);
}

TEST_CASE("mixture of logistics rejects bad shapes and targets with a message naming them") {
  Tensor params = Tensor::zeros({4, 7}), bytes = Tensor::zeros({4}, Device::cpu, DType::i32);
  Tensor nll = Tensor::zeros({4});
  CHECK_THROWS_WITH_AS(mol_loss_forward(params, bytes, nll),
                       doctest::Contains("params [4, 7] must end in 3K values"), lt::Error);
  params = Tensor::zeros({4, 9});
  Tensor short_bytes = Tensor::zeros({3}, Device::cpu, DType::i32);
  CHECK_THROWS_WITH_AS(mol_loss_forward(params, short_bytes, nll),
                       doctest::Contains("targets [3] needs one entry per row of params [4, 9]"),
                       lt::Error);
  Tensor bad = Tensor::from_vector(std::vector<int32_t>{0, 256, 3, 4}, {4});
  CHECK_THROWS_WITH_AS(mol_loss_forward(params, bad, nll),
                       doctest::Contains("target 256 at row 1 is not a byte"), lt::Error);
  Tensor dparams = Tensor::zeros({4, 6});
  CHECK_THROWS_WITH_AS(mol_loss_backward(params, bytes, 1.f, dparams),
                       doctest::Contains("expected shape [4, 9], got [4, 6]"), lt::Error);
}
