// Reformer's LSH attention (Kitaev et al. 2020), the baseline of the paper's
// Figures 1-2, on the CPU: threads over (batch, head) pairs as the other
// forms. Per pair and round: hash the real positions (angular LSH, section 2,
// "LSH attention"), sort them by (bucket, position) with a counting sort,
// and attend chunk by chunk to the chunk and the one before it. Scores are
// recomputed in backward from the saved order and log-normalisers, so the
// memory is O(rounds L) per pair beside the inputs, never O(L^2).
//
// Multi-round attention (appendix A): query i attends over the union of its
// rounds' key sets P_i^r. Round r computes a softmax over P_i^r of
// s_ij - ln N_ij, N_ij = |{r' : j in P_i^r'}|, giving o_i^r and its
// log-normaliser z_i^r; then o_i = sum_r exp(z_i^r - z_i) o_i^r with
// z_i = logsumexp_r z_i^r, which is the softmax over the union with every key
// counted once. Forward merges the rounds as they come (an online softmax
// over rounds), so no per-round output is kept.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "attention/attention.h"
#include "attention/attention_dims.h"
#include "attention/head_loop.h"
#include "attention/lengths.h"
#include "backend/cpu_scratch.h"
#include "common/random.h"
#include "ops/simd_math.h"

namespace lt {

void LshOptions::validate() const {
  check(rounds >= 1 && rounds <= 64, "LSH rounds must be in 1..64, got " + std::to_string(rounds));
  check(buckets == 1 || (buckets >= 2 && buckets <= 65536 && buckets % 2 == 0),
        "LSH buckets must be 1 or even in 2..65536 (angular LSH pairs each "
        "direction with its opposite), got " +
            std::to_string(buckets));
  check(chunk >= 1 && chunk <= 65536, "LSH chunk must be in 1..65536, got " + std::to_string(chunk));
}

int64_t lsh_bucket_count(const LshOptions& o, int64_t length) {
  if (o.buckets == 1) return 1;
  return std::min(o.buckets, std::max<int64_t>(2, 2 * ((length + o.chunk - 1) / o.chunk)));
}

void draw_lsh_rotations(uint64_t seed, Tensor& rotations) {
  check(rotations.ndim() == 3 && rotations.device() == Device::cpu && rotations.dtype() == DType::f32,
        "LSH rotations must be a float32 CPU tensor [rounds, E, buckets / 2], "
        "got " +
            shape_str(rotations.shape()));
  const int64_t rounds = rotations.dim(0), per = rotations.dim(1) * rotations.dim(2);
  float* r = rotations.data();
  for (int64_t round = 0; round < rounds; ++round)
    for (int64_t i = 0; i < per; ++i) {  // Box-Muller from two counter-based uniforms
      const double u1 = sample_uniform(seed, round, i, 0), u2 = sample_uniform(seed, round, i, 1);
      r[round * per + i] = float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
}

namespace {

constexpr float kNoKey = -std::numeric_limits<float>::infinity();

// Grow-only integer scratch of the calling thread (orders, buckets, chunk
// indices).
int32_t* int_scratch(size_t n) {
  thread_local std::vector<int32_t> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t e = 0; e < n; ++e) s += a[e] * b[e];
  return s;
}

// ln N for N = 0..64 rounds: the multi-round correction of a score.
const float* log_counts() {
  static const auto table = [] {
    std::vector<float> t(65, 0.f);
    for (int n = 2; n <= 64; ++n) t[n] = std::log(float(n));
    return t;
  }();
  return table.data();
}

// Column blocks of the window products: every gathered block's row stride
// is a multiple of this, its padding columns zero.
constexpr int64_t kCols = 32;
int64_t padded(int64_t n) { return (n + kCols - 1) / kCols * kCols; }

// C[r, 0:cols) = sum_k A(r, k) B[k, 0:cols) for R rows, A(r, k) = A[r rs + k ks],
// cols a multiple of kCols: R x kCols sums stay in registers over k.
template <int R>
void rows_times(const float* A, int64_t rs, int64_t ks, const float* B, int64_t ldb, int64_t K, int64_t cols, float* C,
                int64_t ldc) {
  for (int64_t c0 = 0; c0 < cols; c0 += kCols) {
    float acc[R][kCols] = {};
    for (int64_t k = 0; k < K; ++k) {
      const float* b = B + k * ldb + c0;
      for (int r = 0; r < R; ++r) {
        const float x = A[r * rs + k * ks];
#pragma omp simd
        for (int t = 0; t < kCols; ++t) acc[r][t] += x * b[t];
      }
    }
    for (int r = 0; r < R; ++r) std::memcpy(C + r * ldc + c0, acc[r], sizeof acc[r]);
  }
}

// C [rows, cols] = A [rows, K] B [K, cols], the products of a chunk's window.
void window_product(const float* A, int64_t rs, int64_t ks, const float* B, int64_t ldb, int64_t K, int64_t rows,
                    int64_t cols, float* C, int64_t ldc) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) rows_times<4>(A + r * rs, rs, ks, B, ldb, K, cols, C + r * ldc, ldc);
  for (; r < rows; ++r) rows_times<1>(A + r * rs, rs, ks, B, ldb, K, cols, C + r * ldc, ldc);
}

// Copies n values into a row of width padded(n), zeroing the padding.
void gather_row(const float* from, int64_t n, float* to, float scale = 1.f) {
  for (int64_t e = 0; e < n; ++e) to[e] = from[e] * scale;
  std::fill(to + n, to + padded(n), 0.f);
}

// out[e, b] = rows[ids[b], e] for e < width, b < n, and zero for b in [n, ldo).
void gather_transposed(const float* rows, int64_t ld, const int32_t* ids, int64_t n, int64_t width, float* out,
                       int64_t ldo) {
  for (int64_t e = 0; e < width; ++e) {
    float* o = out + e * ldo;
#pragma omp simd
    for (int64_t b = 0; b < n; ++b) o[b] = rows[ids[b] * ld + e];
    std::fill(o + n, o + ldo, 0.f);
  }
}

// One (batch, head) pair: strided rows of qk and v, and the per-pair scratch.
// Each chunk's window (its queries, and the keys of the chunk and the one
// before it) is gathered into dense blocks, so that scores, P V and the
// backward's products are small register-blocked matrix products.
struct Head {
  const float* q;  // row i at q + i * HE
  const float* v;  // row j at v + j * HM
  int64_t HE, HM, E, M, len;
  float temp;
  const LshOptions* o;
  int64_t Wp, Ep, Mp;             // padded window, key and value widths
  float* kn = nullptr;            // [len, E] the keys: q_j / |q_j|
  float* norms = nullptr;         // [len]
  float* queries = nullptr;       // [chunk, Ep] the chunk's queries times temp
  float* keys_t = nullptr;        // [E, Wp] the window's keys, transposed
  float* scores = nullptr;        // [chunk, Wp] scores, then probabilities
  float* grads = nullptr;         // [chunk, Wp] backward: dP, then dS / temp
  float* keys = nullptr;          // [Wp, Ep] backward: the window's keys
  float* values = nullptr;        // [Wp, Mp] forward: the window's values
  float* values_t = nullptr;      // [M, Wp] backward: the same, transposed
  float* douts = nullptr;         // [chunk, Mp] backward: the chunk's output gradients
  float* result = nullptr;        // [Wp, max(Ep, Mp)] a product's rows before they are added
  int32_t* chunks = nullptr;      // [rounds, len]: the chunk of position p in round r
  int32_t* ids = nullptr;         // [Wp] the window's positions
  int32_t* key_chunks = nullptr;  // [rounds, Wp] their chunks in every round
  int32_t* seen = nullptr;        // [Wp]
  int32_t* bucket = nullptr;      // [len] forward: a round's buckets
  int32_t* counts = nullptr;      // [buckets + 1] forward: the counting sort's offsets
};

void normalise_keys(Head& h) {
  for (int64_t j = 0; j < h.len; ++j) {
    const float* qj = h.q + j * h.HE;
    h.norms[j] = std::max(std::sqrt(dot(qj, qj, h.E)), 1e-30f);
    const float inv = 1.f / h.norms[j];
    for (int64_t e = 0; e < h.E; ++e) h.kn[j * h.E + e] = qj[e] * inv;
  }
}

// Round r's order: the real positions sorted by (bucket, position), with
// bucket = argmax([q R; -q R]) over the first nb/2 columns of R [E, half].
void hash_and_sort(const Head& h, const float* R, int64_t half, int32_t* order) {
  const int64_t nb = lsh_bucket_count(*h.o, h.len);
  for (int64_t i = 0; i < h.len; ++i) {
    int32_t best = 0;
    float best_value = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < nb / 2; ++c) {
      float x = 0.f;
      for (int64_t e = 0; e < h.E; ++e) x += h.q[i * h.HE + e] * R[e * half + c];
      if (x > best_value) best = int32_t(c), best_value = x;
      if (-x > best_value) best = int32_t(c + nb / 2), best_value = -x;
    }
    h.bucket[i] = best;
  }
  std::fill(h.counts, h.counts + nb + 1, 0);
  for (int64_t i = 0; i < h.len; ++i) ++h.counts[h.bucket[i] + 1];
  for (int64_t b = 0; b < nb; ++b) h.counts[b + 1] += h.counts[b];
  for (int64_t i = 0; i < h.len; ++i) order[h.counts[h.bucket[i]]++] = int32_t(i);  // stable: positions ascend
}

void note_chunks(const Head& h, const int32_t* order, int32_t* chunks) {
  for (int64_t s = 0; s < h.len; ++s) chunks[order[s]] = int32_t(s / h.o->chunk);
}

// Chunk k of a round: query slots [q0, q1) of the sorted order, key slots
// [w0, w1) (the chunk and the one before it).
struct Window {
  int64_t q0, q1, w0, w1;
  int64_t queries() const { return q1 - q0; }
  int64_t keys() const { return w1 - w0; }
};

// Scores [queries of chunk k, keys of its window] of a round into h.scores:
// temp q_i . k_j - ln N_ij, or -inf where j is masked (itself, a later
// position when causal). N_ij counts the rounds whose window of i holds j.
// Leaves the window's positions in h.ids, its queries in h.queries.
Window chunk_scores(const Head& h, const int32_t* order, int64_t k) {
  const int64_t c = h.o->chunk, rounds = h.o->rounds, E = h.E, Wp = h.Wp;
  const Window w{k * c, std::min(h.len, k * c + c), std::max<int64_t>(0, k * c - c), std::min(h.len, k * c + c)};
  const int64_t nq = w.queries(), nw = w.keys();
  int32_t *ids = h.ids, *seen = h.seen;
  std::copy(order + w.w0, order + w.w1, ids);
  for (int64_t r = 0; r < rounds && rounds > 1; ++r)
    for (int64_t b = 0; b < nw; ++b) h.key_chunks[r * Wp + b] = h.chunks[r * h.len + ids[b]];
  gather_transposed(h.kn, E, ids, nw, E, h.keys_t, Wp);
  for (int64_t a = 0; a < nq; ++a) gather_row(h.q + order[w.q0 + a] * h.HE, E, h.queries + a * h.Ep, h.temp);
  window_product(h.queries, h.Ep, 1, h.keys_t, Wp, E, nq, Wp, h.scores, Wp);
  const float* logs = log_counts();
  const bool causal = h.o->causal;
  for (int64_t a = 0; a < nq; ++a) {
    const int32_t i = order[w.q0 + a];
    float* row = h.scores + a * Wp;
    if (rounds > 1) {
      std::fill(seen, seen + nw, 0);
      for (int64_t r = 0; r < rounds; ++r) {
        const int32_t ci = h.chunks[r * h.len + i];
        const int32_t* cj = h.key_chunks + r * Wp;
#pragma omp simd
        for (int64_t b = 0; b < nw; ++b) seen[b] += uint32_t(ci - cj[b]) <= 1u;  // same chunk or the next
      }
#pragma omp simd
      for (int64_t b = 0; b < nw; ++b) row[b] -= logs[seen[b]];
    }
#pragma omp simd
    for (int64_t b = 0; b < nw; ++b)
      if (ids[b] == i || (causal && ids[b] > i)) row[b] = kNoKey;
  }
  return w;
}

// row[0, n) = softmax(row[0, n)), returning its log-normaliser; a row of
// masked keys alone becomes zeros with log-normaliser -inf.
float softmax_row(float* row, int64_t n) {
  float mx = kNoKey;
#pragma omp simd reduction(max : mx)
  for (int64_t b = 0; b < n; ++b) mx = row[b] > mx ? row[b] : mx;
  if (mx == kNoKey) {
    std::fill(row, row + n, 0.f);
    return kNoKey;
  }
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t b = 0; b < n; ++b) {
    row[b] = simd_math::exp(row[b] - mx);  // a masked -inf gives 0
    sum += row[b];
  }
  const float inv = 1.f / sum;
#pragma omp simd
  for (int64_t b = 0; b < n; ++b) row[b] *= inv;
  return mx + std::log(sum);
}

// From a row's scores and dP: p = exp(s - lse) and g = p (dP - D).
void probability_grads(float* p, float* g, int64_t n, float lse, float D) {
#pragma omp simd
  for (int64_t b = 0; b < n; ++b) {
    const float pb = simd_math::exp(p[b] - lse);
    p[b] = pb;
    g[b] = pb * (g[b] - D);
  }
}

// One pair's forward: out rows accumulate the rounds (online over rounds),
// lse [len] their log-normalisers.
void forward_head(Head& h, const float* rotations, int64_t half, int32_t* order, int64_t L, float* out, float* lse) {
  const int64_t c = h.o->chunk, rounds = h.o->rounds, Wp = h.Wp, M = h.M;
  normalise_keys(h);
  for (int64_t r = 0; r < rounds; ++r) {
    hash_and_sort(h, rotations ? rotations + r * h.E * half : nullptr, half, order + r * L);
    note_chunks(h, order + r * L, h.chunks + r * h.len);
  }
  for (int64_t i = 0; i < h.len; ++i) {
    std::fill(out + i * h.HM, out + i * h.HM + M, 0.f);
    lse[i] = kNoKey;
  }
  for (int64_t r = 0; r < rounds; ++r) {
    const int32_t* ord = order + r * L;
    for (int64_t k = 0; k * c < h.len; ++k) {
      const Window w = chunk_scores(h, ord, k);
      const int64_t nq = w.queries(), nw = w.keys();
      for (int64_t b = 0; b < nw; ++b) gather_row(h.v + h.ids[b] * h.HM, M, h.values + b * h.Mp);
      float* z = h.grads;  // the rows' log-normalisers (forward has no gradients)
      for (int64_t a = 0; a < nq; ++a) {
        float* row = h.scores + a * Wp;
        z[a] = softmax_row(row, nw);
      }
      window_product(h.scores, Wp, 1, h.values, h.Mp, nw, nq, h.Mp, h.result, h.Mp);
      for (int64_t a = 0; a < nq; ++a) {
        if (z[a] == kNoKey) continue;
        const int64_t i = ord[w.q0 + a];
        const float merged =
            lse[i] == kNoKey ? z[a] : std::max(lse[i], z[a]) + std::log1p(std::exp(-std::abs(lse[i] - z[a])));
        const float keep = lse[i] == kNoKey ? 0.f : std::exp(lse[i] - merged), add = std::exp(z[a] - merged);
        float* oi = out + i * h.HM;
        const float* oa = h.result + a * h.Mp;
        for (int64_t m = 0; m < M; ++m) oi[m] = oi[m] * keep + oa[m] * add;
        lse[i] = merged;
      }
    }
  }
  for (int64_t i = 0; i < h.len; ++i)  // no other key in any round: the query attends to itself
    if (lse[i] == kNoKey) std::memcpy(out + i * h.HM, h.v + i * h.HM, sizeof(float) * M);
}

// One pair's backward with p_ij = exp(s_ij - lse_i) over the union: each
// round adds its share p_ij / N_ij, so the rounds together count each pair
// once. With g_ij = p_ij (dout_i . v_j - dout_i . out_i):
//   dv_j += p_ij dout_i,  dq_i += temp g_ij k_j,  dk_j += temp g_ij q_i,
//   then dq_j += (I - k_j k_j^T) dk_j / |q_j|.
void backward_head(Head& h, const int32_t* order, int64_t L, const float* lse, const float* out, const float* dout,
                   float* dq, float* dv, float* dk, float* D) {
  const int64_t c = h.o->chunk, rounds = h.o->rounds, Wp = h.Wp, E = h.E, M = h.M;
  normalise_keys(h);
  for (int64_t r = 0; r < rounds; ++r) note_chunks(h, order + r * L, h.chunks + r * h.len);
  for (int64_t i = 0; i < h.len; ++i) {
    D[i] = dot(dout + i * h.HM, out + i * h.HM, M);
    std::fill(dq + i * h.HE, dq + i * h.HE + E, 0.f);
    std::fill(dv + i * h.HM, dv + i * h.HM + M, 0.f);
  }
  std::fill(dk, dk + h.len * E, 0.f);
  for (int64_t r = 0; r < rounds; ++r) {
    const int32_t* ord = order + r * L;
    for (int64_t k = 0; k * c < h.len; ++k) {
      const Window w = chunk_scores(h, ord, k);
      const int64_t nq = w.queries(), nw = w.keys();
      for (int64_t b = 0; b < nw; ++b) gather_row(h.kn + h.ids[b] * E, E, h.keys + b * h.Ep);
      gather_transposed(h.v, h.HM, h.ids, nw, M, h.values_t, Wp);
      for (int64_t a = 0; a < nq; ++a) gather_row(dout + ord[w.q0 + a] * h.HM, M, h.douts + a * h.Mp);
      window_product(h.douts, h.Mp, 1, h.values_t, Wp, M, nq, Wp, h.grads, Wp);  // dP
      for (int64_t a = 0; a < nq; ++a) {
        const int64_t i = ord[w.q0 + a];
        float *p = h.scores + a * Wp, *g = h.grads + a * Wp;
        if (lse[i] == kNoKey) {
          std::fill(p, p + nw, 0.f);
          std::fill(g, g + nw, 0.f);
          continue;
        }
        probability_grads(p, g, nw, lse[i], D[i]);
      }
      window_product(h.grads, Wp, 1, h.keys, h.Ep, nw, nq, h.Ep, h.result, h.Ep);  // dq / temp
      for (int64_t a = 0; a < nq; ++a) {
        float* dqi = dq + ord[w.q0 + a] * h.HE;
        for (int64_t e = 0; e < E; ++e) dqi[e] += h.temp * h.result[a * h.Ep + e];
      }
      window_product(h.grads, 1, Wp, h.queries, h.Ep, nq, nw, h.Ep, h.result, h.Ep);  // dk (queries carry temp)
      for (int64_t b = 0; b < nw; ++b) {
        float* dkj = dk + h.ids[b] * E;
        for (int64_t e = 0; e < E; ++e) dkj[e] += h.result[b * h.Ep + e];
      }
      window_product(h.scores, 1, Wp, h.douts, h.Mp, nq, nw, h.Mp, h.result, h.Mp);  // dv
      for (int64_t b = 0; b < nw; ++b) {
        float* dvj = dv + h.ids[b] * h.HM;
        for (int64_t m = 0; m < M; ++m) dvj[m] += h.result[b * h.Mp + m];
      }
    }
  }
  for (int64_t j = 0; j < h.len; ++j) {
    if (lse[j] == kNoKey)  // out_j = v_j
      for (int64_t m = 0; m < M; ++m) dv[j * h.HM + m] += dout[j * h.HM + m];
    const float* kj = h.kn + j * E;
    const float along = dot(dk + j * E, kj, E), inv = 1.f / h.norms[j];
    for (int64_t e = 0; e < E; ++e) dq[j * h.HE + e] += (dk[j * E + e] - along * kj[e]) * inv;
  }
}

AttentionDims checked_dims(const Tensor& qk, const Tensor& v, const LshOptions& o, const std::string& what) {
  o.validate();
  const AttentionDims d = attention_dims(qk, qk, v, what);
  Device dev = common_device({&qk, &v}, what.c_str());
  check(dev == Device::cpu, what + ": LSH attention runs on the CPU only (no CUDA kernel yet)");
  return d;
}

void zero_rows(float* x, int64_t from, int64_t to, int64_t width, int64_t ld) {
  for (int64_t r = from; r < to; ++r) std::memset(x + r * ld, 0, sizeof(float) * width);
}

// Per-worker scratch sizes of one pair (floats and ints) for sequences of L.
struct PairScratch {
  int64_t floats, ints;
};
PairScratch pair_scratch(const AttentionDims& d, const LshOptions& o) {
  const int64_t c = o.chunk, Wp = padded(2 * c), Ep = padded(d.E), Mp = padded(d.M);
  return {
      d.L * d.E + d.L + c * Ep + d.E * Wp + 2 * c * Wp + Wp * Ep + Wp * Mp + d.M * Wp + c * Mp + Wp * std::max(Ep, Mp),
      o.rounds * (d.L + Wp) + 2 * Wp + d.L + lsh_bucket_count(o, d.L) + 1};
}

// The pair's Head over its scratch, laid out as pair_scratch counts it.
Head head_of(const AttentionDims& d, const LshOptions& o, const float* q, const float* v, int64_t len, float* f,
             int32_t* ints) {
  const int64_t c = o.chunk;
  Head h{q,           v,          d.H * d.E, d.H * d.M, d.E, d.M, len, 1.f / std::sqrt(float(d.E)), &o, padded(2 * c),
         padded(d.E), padded(d.M)};
  const auto take = [&f](int64_t n) { return std::exchange(f, f + n); };
  h.kn = take(d.L * d.E);
  h.norms = take(d.L);
  h.queries = take(c * h.Ep);
  h.keys_t = take(d.E * h.Wp);
  h.scores = take(c * h.Wp);
  h.grads = take(c * h.Wp);
  h.keys = take(h.Wp * h.Ep);
  h.values = take(h.Wp * h.Mp);
  h.values_t = take(d.M * h.Wp);
  h.douts = take(c * h.Mp);
  h.result = take(h.Wp * std::max(h.Ep, h.Mp));
  const auto take_ints = [&ints](int64_t n) { return std::exchange(ints, ints + n); };
  h.chunks = take_ints(o.rounds * d.L);
  h.ids = take_ints(h.Wp);
  h.key_chunks = take_ints(o.rounds * h.Wp);
  h.seen = take_ints(h.Wp);
  h.bucket = take_ints(d.L);
  h.counts = ints;
  return h;
}

}  // namespace

void lsh_attention_forward(const Tensor& qk, const Tensor& v, const Tensor& rotations, const Tensor& lengths,
                           const LshOptions& o, Tensor& order, Tensor& lse, Tensor& out) {
  const std::string what = "lsh_attention_forward";
  const AttentionDims d = checked_dims(qk, v, o, what);
  const int64_t half = o.buckets / 2;
  if (o.buckets > 1) check_shape(rotations, {o.rounds, d.E, half}, "lsh_attention_forward rotations");
  check(order.dtype() == DType::i32, what + ": order must be int32");
  check_shape(order, {d.N, d.H, o.rounds, d.L}, "lsh_attention_forward order");
  check_shape(lse, {d.N, d.H, d.L}, "lsh_attention_forward lse");
  check_shape(out, attention_out_shape(d), "lsh_attention_forward out");
  const int32_t* lens = lengths_data(lengths, d.N, d.L, what + " lengths");
  const cpu::HeadLoop plan = cpu::plan_head_loop(d.N * d.H);
  const PairScratch per = pair_scratch(d, o);
  float* fs = cpu::scratch(size_t(plan.workers * per.floats));
  int32_t* is = int_scratch(size_t(plan.workers * per.ints));
  const float* rot = o.buckets > 1 ? rotations.data() : nullptr;
  cpu::for_each_head(plan, d.N * d.H, [&](int64_t nh, int worker) {
    const int64_t n = nh / d.H, hd = nh % d.H, len = length_of(lens, n, d.L);
    Head h = head_of(d, o, qk.data() + n * d.L * d.H * d.E + hd * d.E, v.data() + n * d.L * d.H * d.M + hd * d.M, len,
                     fs + worker * per.floats, is + worker * per.ints);
    int32_t* ord = order.data_i32() + nh * o.rounds * d.L;
    std::fill(ord, ord + o.rounds * d.L, -1);
    float* oh = out.data() + n * d.L * d.H * d.M + hd * d.M;
    float* lh = lse.data() + nh * d.L;
    forward_head(h, rot, half, ord, d.L, oh, lh);
    std::fill(lh + len, lh + d.L, 0.f);
    zero_rows(oh, len, d.L, d.M, h.HM);
  });
}

void lsh_attention_backward(const Tensor& qk, const Tensor& v, const Tensor& lengths, const LshOptions& o,
                            const Tensor& order, const Tensor& lse, const Tensor& out, const Tensor& dout, Tensor& dqk,
                            Tensor& dv) {
  const std::string what = "lsh_attention_backward";
  const AttentionDims d = checked_dims(qk, v, o, what);
  check(order.dtype() == DType::i32, what + ": order must be int32");
  check_shape(order, {d.N, d.H, o.rounds, d.L}, "lsh_attention_backward order");
  check_shape(lse, {d.N, d.H, d.L}, "lsh_attention_backward lse");
  check_shape(out, attention_out_shape(d), "lsh_attention_backward out");
  check_shape(dout, attention_out_shape(d), "lsh_attention_backward dout");
  check_shape(dqk, qk.shape(), "lsh_attention_backward dqk");
  check_shape(dv, v.shape(), "lsh_attention_backward dv");
  const int32_t* lens = lengths_data(lengths, d.N, d.L, what + " lengths");
  const cpu::HeadLoop plan = cpu::plan_head_loop(d.N * d.H);
  const PairScratch per = pair_scratch(d, o);
  const int64_t floats = per.floats + d.L * d.E + d.L;  // + dk [L, E] and dout . out [L]
  float* fs = cpu::scratch(size_t(plan.workers * floats));
  int32_t* is = int_scratch(size_t(plan.workers * per.ints));
  cpu::for_each_head(plan, d.N * d.H, [&](int64_t nh, int worker) {
    const int64_t n = nh / d.H, hd = nh % d.H, len = length_of(lens, n, d.L);
    const int64_t q_at = n * d.L * d.H * d.E + hd * d.E, v_at = n * d.L * d.H * d.M + hd * d.M;
    float* f = fs + worker * floats;
    Head h = head_of(d, o, qk.data() + q_at, v.data() + v_at, len, f, is + worker * per.ints);
    float* dk = f + per.floats;
    backward_head(h, order.data_i32() + nh * o.rounds * d.L, d.L, lse.data() + nh * d.L, out.data() + v_at,
                  dout.data() + v_at, dqk.data() + q_at, dv.data() + v_at, dk, dk + d.L * d.E);
    zero_rows(dqk.data() + q_at, len, d.L, d.E, h.HE);
    zero_rows(dv.data() + v_at, len, d.L, d.M, h.HM);
  });
}

}  // namespace lt
