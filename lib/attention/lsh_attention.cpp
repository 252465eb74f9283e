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
#include <vector>

#include "attention/attention_dims.h"
#include "attention/head_loop.h"
#include "attention/lengths.h"
#include "backend/cpu_scratch.h"
#include "lt/attention.h"
#include "lt/random.h"

namespace lt {

void LshOptions::validate() const {
  check(rounds >= 1 && rounds <= 64, "LSH rounds must be in 1..64, got " + std::to_string(rounds));
  check(buckets == 1 || (buckets >= 2 && buckets <= 65536 && buckets % 2 == 0),
        "LSH buckets must be 1 or even in 2..65536 (angular LSH pairs each direction with its opposite), got " +
            std::to_string(buckets));
  check(chunk >= 1 && chunk <= 65536, "LSH chunk must be in 1..65536, got " + std::to_string(chunk));
}

int64_t lsh_bucket_count(const LshOptions& o, int64_t length) {
  if (o.buckets == 1) return 1;
  return std::min(o.buckets, std::max<int64_t>(2, 2 * ((length + o.chunk - 1) / o.chunk)));
}

void draw_lsh_rotations(uint64_t seed, Tensor& rotations) {
  check(rotations.ndim() == 3 && rotations.device() == Device::cpu && rotations.dtype() == DType::f32,
        "LSH rotations must be a float32 CPU tensor [rounds, E, buckets / 2], got " + shape_str(rotations.shape()));
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

// Grow-only integer scratch of the calling thread (orders, buckets, chunk indices).
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

void axpy(float a, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t e = 0; e < n; ++e) y[e] += a * x[e];
}

// One (batch, head) pair: strided rows of qk and v, and the per-pair scratch.
struct Head {
  const float* q;  // row i at q + i * HE
  const float* v;  // row j at v + j * HM
  int64_t HE, HM, E, M, len;
  float temp;
  const LshOptions* o;
  float* kn;         // [len, E] the keys: q_j / |q_j|
  float* norms;      // [len]
  int32_t* chunks;   // [rounds, len]: the chunk of position p in round r
  float* scores;     // [chunk, 2 chunk]
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
void hash_and_sort(const Head& h, const float* R, int64_t half, int32_t* bucket, int32_t* counts, int32_t* order) {
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
    bucket[i] = best;
  }
  std::fill(counts, counts + nb + 1, 0);
  for (int64_t i = 0; i < h.len; ++i) ++counts[bucket[i] + 1];
  for (int64_t b = 0; b < nb; ++b) counts[b + 1] += counts[b];
  for (int64_t i = 0; i < h.len; ++i) order[counts[bucket[i]]++] = int32_t(i);  // stable: positions ascend
}

void note_chunks(const Head& h, const int32_t* order, int32_t* chunks) {
  for (int64_t s = 0; s < h.len; ++s) chunks[order[s]] = int32_t(s / h.o->chunk);
}

// Scores [queries of chunk k, keys of its window] of round r into h.scores
// (row stride 2 chunk): temp q_i . k_j - ln N_ij, or -inf where j is masked
// (itself, a later position when causal). The window is the sorted
// positions [w0, w1); returns w0.
int64_t chunk_scores(const Head& h, const int32_t* order, int64_t k, int64_t& w1) {
  const int64_t c = h.o->chunk, rounds = h.o->rounds;
  const int64_t q0 = k * c, q1 = std::min(h.len, q0 + c), w0 = std::max<int64_t>(0, q0 - c);
  w1 = q1;
  for (int64_t a = q0; a < q1; ++a) {
    const int64_t i = order[a];
    float* row = h.scores + (a - q0) * 2 * c;
    for (int64_t b = w0; b < w1; ++b) {
      const int64_t j = order[b];
      if (j == i || (h.o->causal && j > i)) {
        row[b - w0] = kNoKey;
        continue;
      }
      int seen = 0;  // N_ij: the rounds whose window of i holds j
      for (int64_t r = 0; r < rounds && rounds > 1; ++r) {
        const int32_t gap = h.chunks[r * h.len + i] - h.chunks[r * h.len + j];
        seen += gap == 0 || gap == 1;
      }
      row[b - w0] = h.temp * dot(h.q + i * h.HE, h.kn + j * h.E, h.E) - (seen > 1 ? std::log(float(seen)) : 0.f);
    }
  }
  return w0;
}

// One pair's forward: out rows accumulate the rounds (online over rounds),
// lse [len] their log-normalisers.
void forward_head(Head& h, const float* rotations, int64_t half, int32_t* order, int64_t L, int32_t* ints,
                  float* o_round, float* out, float* lse) {
  const int64_t c = h.o->chunk, rounds = h.o->rounds;
  normalise_keys(h);
  int32_t *bucket = ints, *counts = ints + h.len;
  for (int64_t r = 0; r < rounds; ++r) {
    hash_and_sort(h, rotations ? rotations + r * h.E * half : nullptr, half, bucket, counts, order + r * L);
    note_chunks(h, order + r * L, h.chunks + r * h.len);
  }
  for (int64_t i = 0; i < h.len; ++i) {
    std::fill(out + i * h.HM, out + i * h.HM + h.M, 0.f);
    lse[i] = kNoKey;
  }
  for (int64_t r = 0; r < rounds; ++r) {
    const int32_t* ord = order + r * L;
    for (int64_t k = 0; k * c < h.len; ++k) {
      int64_t w1;
      const int64_t w0 = chunk_scores(h, ord, k, w1);
      for (int64_t a = k * c; a < std::min(h.len, (k + 1) * c); ++a) {
        const float* row = h.scores + (a - k * c) * 2 * c;
        float mx = kNoKey;
        for (int64_t b = 0; b < w1 - w0; ++b) mx = std::max(mx, row[b]);
        if (mx == kNoKey) continue;  // nothing but itself in this round's window
        float sum = 0.f;
        std::fill(o_round, o_round + h.M, 0.f);
        for (int64_t b = 0; b < w1 - w0; ++b) {
          if (row[b] == kNoKey) continue;
          const float p = std::exp(row[b] - mx);
          sum += p;
          axpy(p, h.v + ord[w0 + b] * h.HM, o_round, h.M);
        }
        const int64_t i = ord[a];
        const float z = mx + std::log(sum), merged = lse[i] == kNoKey ? z : std::max(lse[i], z) +
                                                         std::log1p(std::exp(-std::abs(lse[i] - z)));
        const float keep = lse[i] == kNoKey ? 0.f : std::exp(lse[i] - merged), add = std::exp(z - merged) / sum;
        float* oi = out + i * h.HM;
        for (int64_t m = 0; m < h.M; ++m) oi[m] = oi[m] * keep + o_round[m] * add;
        lse[i] = merged;
      }
    }
  }
  for (int64_t i = 0; i < h.len; ++i)  // no other key in any round: the query attends to itself
    if (lse[i] == kNoKey) std::memcpy(out + i * h.HM, h.v + i * h.HM, sizeof(float) * h.M);
}

// One pair's backward with p_ij = exp(s_ij - lse_i) over the union: each
// round adds its share p_ij / N_ij, so the rounds together count each pair once.
//   dv_j += p_ij dout_i,  ds_ij = p_ij (dout_i . v_j - dout_i . out_i),
//   dq_i += temp ds_ij k_j,  dk_j += temp ds_ij q_i,  then dq_j += (I - k_j k_j^T) dk_j / |q_j|.
void backward_head(Head& h, const int32_t* order, int64_t L, const float* lse, const float* out, const float* dout,
                   float* dq, float* dv, float* dk, float* D) {
  const int64_t c = h.o->chunk, rounds = h.o->rounds;
  normalise_keys(h);
  for (int64_t r = 0; r < rounds; ++r) note_chunks(h, order + r * L, h.chunks + r * h.len);
  for (int64_t i = 0; i < h.len; ++i) {
    D[i] = dot(dout + i * h.HM, out + i * h.HM, h.M);
    std::fill(dq + i * h.HE, dq + i * h.HE + h.E, 0.f);
    std::fill(dv + i * h.HM, dv + i * h.HM + h.M, 0.f);
  }
  std::fill(dk, dk + h.len * h.E, 0.f);
  for (int64_t r = 0; r < rounds; ++r) {
    const int32_t* ord = order + r * L;
    for (int64_t k = 0; k * c < h.len; ++k) {
      int64_t w1;
      const int64_t w0 = chunk_scores(h, ord, k, w1);
      for (int64_t a = k * c; a < std::min(h.len, (k + 1) * c); ++a) {
        const int64_t i = ord[a];
        if (lse[i] == kNoKey) continue;
        const float* row = h.scores + (a - k * c) * 2 * c;
        const float* gi = dout + i * h.HM;
        for (int64_t b = 0; b < w1 - w0; ++b) {
          if (row[b] == kNoKey) continue;
          const int64_t j = ord[w0 + b];
          const float p = std::exp(row[b] - lse[i]);
          axpy(p, gi, dv + j * h.HM, h.M);
          const float ds = h.temp * p * (dot(gi, h.v + j * h.HM, h.M) - D[i]);
          axpy(ds, h.kn + j * h.E, dq + i * h.HE, h.E);
          axpy(ds, h.q + i * h.HE, dk + j * h.E, h.E);
        }
      }
    }
  }
  for (int64_t j = 0; j < h.len; ++j) {
    if (lse[j] == kNoKey) axpy(1.f, dout + j * h.HM, dv + j * h.HM, h.M);  // out_j = v_j
    const float* kj = h.kn + j * h.E;
    const float along = dot(dk + j * h.E, kj, h.E), inv = 1.f / h.norms[j];
    for (int64_t e = 0; e < h.E; ++e) dq[j * h.HE + e] += (dk[j * h.E + e] - along * kj[e]) * inv;
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
  const int64_t c = o.chunk;
  return {d.L * d.E + d.L + 2 * c * c + d.M, o.rounds * d.L + d.L + lsh_bucket_count(o, d.L) + 1};
}

Head head_of(const AttentionDims& d, const LshOptions& o, const float* q, const float* v, int64_t len, float* f,
             int32_t* ints) {
  Head h{q, v, d.H * d.E, d.H * d.M, d.E, d.M, len, 1.f / std::sqrt(float(d.E)), &o, f, f + d.L * d.E, ints,
         f + d.L * d.E + d.L};
  return h;
}

}  // namespace

void lsh_attention_forward(const Tensor& qk, const Tensor& v, const Tensor& rotations, const Tensor& lengths,
                           const LshOptions& o, Tensor& order, Tensor& lse, Tensor& out) {
  const std::string what = "lsh_attention_forward";
  const AttentionDims d = checked_dims(qk, v, o, what);
  const int64_t half = o.buckets / 2;
  if (o.buckets > 1)
    check_shape(rotations, {o.rounds, d.E, half}, "lsh_attention_forward rotations");
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
    float* f = fs + worker * per.floats;
    int32_t* ints = is + worker * per.ints;
    Head h = head_of(d, o, qk.data() + n * d.L * d.H * d.E + hd * d.E, v.data() + n * d.L * d.H * d.M + hd * d.M,
                     len, f, ints);
    int32_t* ord = order.data_i32() + nh * o.rounds * d.L;
    std::fill(ord, ord + o.rounds * d.L, -1);
    float* oh = out.data() + n * d.L * d.H * d.M + hd * d.M;
    float* lh = lse.data() + nh * d.L;
    forward_head(h, rot, half, ord, d.L, ints + o.rounds * d.L, f + d.L * d.E + d.L + 2 * o.chunk * o.chunk, oh,
                 lh);
    std::fill(lh + len, lh + d.L, 0.f);
    zero_rows(oh, len, d.L, d.M, h.HM);
  });
}

void lsh_attention_backward(const Tensor& qk, const Tensor& v, const Tensor& lengths, const LshOptions& o,
                            const Tensor& order, const Tensor& lse, const Tensor& out, const Tensor& dout,
                            Tensor& dqk, Tensor& dv) {
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
