// A float64 reference of Reformer's LSH attention written from the
// definition (attention/attention.h): the bucketing of each round, then for each
// query one softmax over the union of its rounds' windows, every key once.
// It shares no code with lib/attention/lsh_attention.cpp, which computes the
// same union round by round with the ln N_ij correction.
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "attention/attention.h"

namespace lt::test {

struct LshDims {
  int64_t N, L, H, E, M;
};

// Per (n, h, round) the real positions sorted by (bucket, position), -1 past
// the length, as the op's order [N, H, rounds, L]. margin receives the
// smallest gap between the best and second-best hash value over all
// positions: a caller redraws inputs whose buckets float32 could not settle.
inline std::vector<int32_t> reference_orders(const std::vector<double>& qk, const std::vector<double>& rot,
                                             const std::vector<int32_t>& lens, const LshDims& d, const LshOptions& o,
                                             double& margin) {
  std::vector<int32_t> order(d.N * d.H * o.rounds * d.L, -1);
  margin = 1e300;
  const int64_t half = o.buckets / 2;
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h)
      for (int64_t r = 0; r < o.rounds; ++r) {
        const int64_t len = lens[n], nb = lsh_bucket_count(o, len);
        std::vector<int64_t> bucket(len, 0);
        for (int64_t i = 0; i < len && nb > 1; ++i) {
          std::vector<double> hv;  // [x R; -x R]
          for (int64_t c = 0; c < nb / 2; ++c) {
            double x = 0;
            for (int64_t e = 0; e < d.E; ++e) x += qk[((n * d.L + i) * d.H + h) * d.E + e] * rot[(r * d.E + e) * half + c];
            hv.push_back(x);
          }
          for (int64_t c = 0; c < nb / 2; ++c) hv.push_back(-hv[c]);
          bucket[i] = std::max_element(hv.begin(), hv.end()) - hv.begin();
          std::vector<double> sorted = hv;
          std::sort(sorted.rbegin(), sorted.rend());
          margin = std::min(margin, sorted[0] - sorted[1]);
        }
        std::vector<int32_t> pos(len);
        std::iota(pos.begin(), pos.end(), 0);
        std::stable_sort(pos.begin(), pos.end(), [&](int32_t a, int32_t b) { return bucket[a] < bucket[b]; });
        std::copy(pos.begin(), pos.end(), order.begin() + ((n * d.H + h) * o.rounds + r) * d.L);
      }
  return order;
}

// out [N, L, H, M] given the bucketing `order`: query i < len attends, with
// weights softmax_j(q_i . q_j / (|q_j| sqrt(E))), to the keys j < len, j != i
// (j <= i when causal) that share a window with it in some round (j's chunk
// is i's or the one before); with no such key, out_i = v_i. Padding: zeros.
inline std::vector<double> reference_lsh(const std::vector<double>& qk, const std::vector<double>& v,
                                         const std::vector<int32_t>& order, const std::vector<int32_t>& lens,
                                         const LshDims& d, const LshOptions& o) {
  std::vector<double> out(d.N * d.L * d.H * d.M, 0.0);
  auto q = [&](int64_t n, int64_t i, int64_t h) { return &qk[((n * d.L + i) * d.H + h) * d.E]; };
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t h = 0; h < d.H; ++h) {
      const int64_t len = lens[n];
      std::vector<std::vector<int64_t>> chunk(o.rounds, std::vector<int64_t>(len));
      for (int64_t r = 0; r < o.rounds; ++r)
        for (int64_t s = 0; s < len; ++s) chunk[r][order[((n * d.H + h) * o.rounds + r) * d.L + s]] = s / o.chunk;
      for (int64_t i = 0; i < len; ++i) {
        std::vector<int64_t> keys;
        for (int64_t j = 0; j < len; ++j) {
          if (j == i || (o.causal && j > i)) continue;
          bool seen = false;
          for (int64_t r = 0; r < o.rounds; ++r) seen |= chunk[r][i] - chunk[r][j] == 0 || chunk[r][i] - chunk[r][j] == 1;
          if (seen) keys.push_back(j);
        }
        double* oi = &out[((n * d.L + i) * d.H + h) * d.M];
        if (keys.empty()) {
          for (int64_t m = 0; m < d.M; ++m) oi[m] = v[((n * d.L + i) * d.H + h) * d.M + m];
          continue;
        }
        std::vector<double> s;
        for (int64_t j : keys) {
          double dot = 0, norm = 0;
          for (int64_t e = 0; e < d.E; ++e) dot += q(n, i, h)[e] * q(n, j, h)[e], norm += q(n, j, h)[e] * q(n, j, h)[e];
          s.push_back(dot / std::sqrt(norm) / std::sqrt(double(d.E)));
        }
        const double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (size_t k = 0; k < keys.size(); ++k)
          for (int64_t m = 0; m < d.M; ++m) oi[m] += s[k] / sum * v[((n * d.L + keys[k]) * d.H + h) * d.M + m];
      }
    }
  return out;
}

}  // namespace lt::test
