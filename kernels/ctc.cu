// CTC loss on the GPU, the same recursions as lib/heads/ctc_loss.cpp in the
// same double precision: a log-softmax kernel, then one block per row walking
// the frames in order for alpha (and beta), its threads over the extended
// label positions with a barrier per frame, then a gradient kernel per frame.
// The recursions are sequential in time; rows and label positions are the
// parallelism, which is plenty for a batch and small next to the encoder.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_check.cuh"
#include "kernels.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;

__device__ inline double log_add(double a, double b) {
  if (a < b) {
    const double t = a;
    a = b;
    b = t;
  }
  if (b == -INFINITY) return a;
  return a + log1p(exp(b - a));
}

__device__ inline int ext(const int32_t* l, int64_t u) { return u % 2 == 0 ? 0 : l[u / 2]; }

__device__ inline int64_t min_frames(const int32_t* l, int64_t n) {
  int64_t f = n;
  for (int64_t i = 1; i < n; ++i) f += l[i] == l[i - 1];
  return f;
}

// logp [B, T, C] = log_softmax(logits) in double; one warp per frame.
__global__ void log_softmax_kernel(const float* logits, double* logp, int64_t T, int64_t C) {
  const int64_t row = blockIdx.x;  // b * T + t
  const float* x = logits + row * C;
  double m = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += 32) m = fmax(m, double(x[c]));
  m = warp_max(m);
  double s = 0;
  for (int64_t c = threadIdx.x; c < C; c += 32) s += exp(double(x[c]) - m);
  s = warp_sum(s);
  const double lse = m + log(s);
  for (int64_t c = threadIdx.x; c < C; c += 32) logp[row * C + c] = double(x[c]) - lse;
}

struct Rows {
  const int32_t* frames;
  const int32_t* labels;
  const int64_t* offsets;
  int64_t T, C, U;  // U: the widest extended sequence of the batch
};

// alpha [B, T, U]; nll[b] = -log p, +inf for a row too short for its labels.
__global__ void alpha_kernel(const double* logp, double* alpha, float* nll, Rows r) {
  const int64_t b = blockIdx.x, T = r.frames[b], S = r.offsets[b + 1] - r.offsets[b], U = 2 * S + 1;
  const int32_t* l = r.labels + r.offsets[b];
  const double* lp = logp + b * r.T * r.C;
  double* a = alpha + b * r.T * r.U;
  if (T == 0 || T < min_frames(l, S)) {  // no frames emit nothing with probability 1
    if (threadIdx.x == 0) nll[b] = T == 0 && S == 0 ? 0.f : INFINITY;
    return;
  }
  for (int64_t u = threadIdx.x; u < U; u += blockDim.x)
    a[u] = u == 0 ? lp[0] : (u == 1 ? lp[l[0]] : -INFINITY);
  __syncthreads();
  for (int64_t t = 1; t < T; ++t) {
    const double* prev = a + (t - 1) * r.U;
    double* cur = a + t * r.U;
    for (int64_t u = threadIdx.x; u < U; u += blockDim.x) {
      const int z = ext(l, u);
      double v = prev[u];
      if (u >= 1) v = log_add(v, prev[u - 1]);
      if (u >= 2 && z != 0 && z != ext(l, u - 2)) v = log_add(v, prev[u - 2]);
      cur[u] = v == -INFINITY ? -INFINITY : v + lp[t * r.C + z];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double* last = a + (T - 1) * r.U;
    nll[b] = float(-(S > 0 ? log_add(last[U - 1], last[U - 2]) : last[U - 1]));
  }
}

__global__ void beta_kernel(const double* logp, double* beta, Rows r) {
  const int64_t b = blockIdx.x, T = r.frames[b], S = r.offsets[b + 1] - r.offsets[b], U = 2 * S + 1;
  const int32_t* l = r.labels + r.offsets[b];
  const double* lp = logp + b * r.T * r.C;
  double* be = beta + b * r.T * r.U;
  if (T == 0 || T < min_frames(l, S)) return;
  for (int64_t u = threadIdx.x; u < U; u += blockDim.x) {
    double v = -INFINITY;
    if (u == U - 1) v = lp[(T - 1) * r.C];
    if (S > 0 && u == U - 2) v = lp[(T - 1) * r.C + l[S - 1]];
    be[(T - 1) * r.U + u] = v;
  }
  __syncthreads();
  for (int64_t t = T - 2; t >= 0; --t) {
    const double* next = be + (t + 1) * r.U;
    double* cur = be + t * r.U;
    for (int64_t u = threadIdx.x; u < U; u += blockDim.x) {
      const int z = ext(l, u);
      double v = next[u];
      if (u + 1 < U) v = log_add(v, next[u + 1]);
      if (u + 2 < U && z != 0 && z != ext(l, u + 2)) v = log_add(v, next[u + 2]);
      cur[u] = v == -INFINITY ? -INFINITY : v + lp[t * r.C + z];
    }
    __syncthreads();
  }
}

// One block per frame (b, t): every class's softmax minus its occupancy.
__global__ void gradient_kernel(const double* logp, const double* alpha, const double* beta, const float* nll,
                                const float* scale, float* dlogits, Rows r) {
  const int64_t row = blockIdx.x, b = row / r.T, t = row % r.T;
  const int64_t S = r.offsets[b + 1] - r.offsets[b], U = 2 * S + 1;
  const int32_t* l = r.labels + r.offsets[b];
  float* g = dlogits + row * r.C;
  const bool live = t < r.frames[b] && isfinite(nll[b]);
  for (int64_t c = threadIdx.x; c < r.C; c += blockDim.x) {
    if (!live) {
      g[c] = 0.f;
      continue;
    }
    const double lp = logp[row * r.C + c];
    double occ = -INFINITY;
    for (int64_t u = 0; u < U; ++u) {
      if (ext(l, u) != c) continue;
      const double ab = alpha[(b * r.T + t) * r.U + u] + beta[(b * r.T + t) * r.U + u];
      if (ab != -INFINITY) occ = log_add(occ, ab - lp);
    }
    const double posterior = occ == -INFINITY ? 0.0 : exp(occ + double(nll[b]));
    g[c] = float(double(scale[b]) * (exp(lp) - posterior));
  }
}

// Device copies of the batch's lengths and labels, and the double workspaces,
// in one buffer that only grows.
struct Workspace {
  char* base = nullptr;
  size_t bytes = 0;
  char* take(size_t n) {
    if (n > bytes) {
      free(base);
      base = static_cast<char*>(malloc(n));
      bytes = n;
    }
    return base;
  }
};

struct Batch {
  Rows rows;
  double *logp, *alpha, *beta;
  float* scale;
};

Batch upload(const int32_t* frames, const int32_t* labels, const int64_t* offsets, const float* scale, int64_t B,
             int64_t T, int64_t C, bool with_beta) {
  static Workspace ws;
  int64_t S_max = 0;
  for (int64_t b = 0; b < B; ++b) S_max = std::max<int64_t>(S_max, offsets[b + 1] - offsets[b]);
  const int64_t U = 2 * S_max + 1, n_labels = offsets[B];
  auto align = [](size_t n) { return (n + 255) / 256 * 256; };
  const size_t f_bytes = align(B * sizeof(int32_t)), l_bytes = align(std::max<int64_t>(n_labels, 1) * sizeof(int32_t)),
               o_bytes = align((B + 1) * sizeof(int64_t)), s_bytes = align(B * sizeof(float)),
               lp_bytes = align(size_t(B * T * C) * sizeof(double)), a_bytes = align(size_t(B * T * U) * sizeof(double));
  char* p = ws.take(f_bytes + l_bytes + o_bytes + s_bytes + lp_bytes + a_bytes * (with_beta ? 2 : 1));
  Batch out;
  auto* d_frames = reinterpret_cast<int32_t*>(p);
  auto* d_labels = reinterpret_cast<int32_t*>(p + f_bytes);
  auto* d_offsets = reinterpret_cast<int64_t*>(p + f_bytes + l_bytes);
  out.scale = reinterpret_cast<float*>(p + f_bytes + l_bytes + o_bytes);
  out.logp = reinterpret_cast<double*>(p + f_bytes + l_bytes + o_bytes + s_bytes);
  out.alpha = reinterpret_cast<double*>(p + f_bytes + l_bytes + o_bytes + s_bytes + lp_bytes);
  out.beta = with_beta ? out.alpha + a_bytes / sizeof(double) : nullptr;
  memcpy_h2d(d_frames, frames, B * sizeof(int32_t));
  if (n_labels > 0) memcpy_h2d(d_labels, labels, n_labels * sizeof(int32_t));
  memcpy_h2d(d_offsets, offsets, (B + 1) * sizeof(int64_t));
  if (scale) memcpy_h2d(out.scale, scale, B * sizeof(float));
  out.rows = Rows{d_frames, d_labels, d_offsets, T, C, U};
  return out;
}

}  // namespace

double ctc_loss_forward(const float* logits, const int32_t* frames, const int32_t* labels, const int64_t* offsets,
                        float* nll, int64_t B, int64_t T, int64_t C) {
  const Batch w = upload(frames, labels, offsets, nullptr, B, T, C, false);
  log_softmax_kernel<<<unsigned(B * T), 32, 0, stream()>>>(logits, w.logp, T, C);
  LT_CUDA_LAUNCH_CHECK();
  alpha_kernel<<<unsigned(B), kThreads, 0, stream()>>>(w.logp, w.alpha, nll, w.rows);
  LT_CUDA_LAUNCH_CHECK();
  std::vector<float> h(static_cast<size_t>(B));
  memcpy_d2h(h.data(), nll, B * sizeof(float));
  double sum = 0;
  for (float v : h) sum += v;
  return sum;
}

void ctc_loss_backward(const float* logits, const int32_t* frames, const int32_t* labels, const int64_t* offsets,
                       const float* scale, float* dlogits, int64_t B, int64_t T, int64_t C) {
  const Batch w = upload(frames, labels, offsets, scale, B, T, C, true);
  float* nll = scratch(size_t(B));
  log_softmax_kernel<<<unsigned(B * T), 32, 0, stream()>>>(logits, w.logp, T, C);
  LT_CUDA_LAUNCH_CHECK();
  alpha_kernel<<<unsigned(B), kThreads, 0, stream()>>>(w.logp, w.alpha, nll, w.rows);
  LT_CUDA_LAUNCH_CHECK();
  beta_kernel<<<unsigned(B), kThreads, 0, stream()>>>(w.logp, w.beta, w.rows);
  LT_CUDA_LAUNCH_CHECK();
  gradient_kernel<<<unsigned(B * T), 64, 0, stream()>>>(w.logp, w.alpha, w.beta, nll, w.scale, dlogits, w.rows);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
