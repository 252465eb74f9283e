// CTC loss on the CPU: the alpha (forward) and beta (backward) recursions of
// Graves et al. 2006 over the label sequence extended with blanks, in log
// space and double precision, one row per thread. Rows are independent, so
// the result does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "backend/dispatch.h"
#include "heads/ctc.h"
#include "heads/log_space.h"

namespace lt {
namespace {

struct CtcDims {
  int64_t B, T, C;
};

CtcDims check_ctc(const Tensor& logits, const std::vector<int32_t>& frames, const CtcTargets& t, const char* what) {
  check(logits.defined() && logits.ndim() == 3 && logits.dim(2) >= 2,
        std::string(what) + ": logits must be [B, T, classes >= 2], got " + shape_str(logits.shape()));
  const CtcDims d{logits.dim(0), logits.dim(1), logits.dim(2)};
  check(int64_t(frames.size()) == d.B && t.rows() == d.B && t.offsets[0] == 0 &&
            t.offsets[d.B] == int64_t(t.labels.size()),
        std::string(what) + ": " + std::to_string(frames.size()) + " frame counts and " + std::to_string(t.rows()) +
            " label rows for a batch of " + std::to_string(d.B));
  for (int64_t b = 0; b < d.B; ++b) {
    check(frames[b] >= 0 && frames[b] <= d.T, std::string(what) + ": row " + std::to_string(b) + " has " +
                                                  std::to_string(frames[b]) + " frames, outside 0.." +
                                                  std::to_string(d.T));
    check(t.offsets[b] <= t.offsets[b + 1], std::string(what) + ": label offsets decrease at row " + std::to_string(b));
    for (int64_t i = t.offsets[b]; i < t.offsets[b + 1]; ++i)
      check(t.labels[i] >= 1 && t.labels[i] < d.C,
            std::string(what) + ": row " + std::to_string(b) + " has label " + std::to_string(t.labels[i]) +
                ", outside 1.." + std::to_string(d.C - 1) + " (0 is the blank)");
  }
  return d;
}

// One row's log-softmax, alpha and beta, kept for the gradient.
struct RowWork {
  std::vector<double> logp, alpha, beta, occupancy;  // [T, C], [T, U], [T, U], [C]
};

// The extended sequence: blank, l1, blank, l2, ..., blank (U = 2S + 1).
inline int32_t ext(const int32_t* l, int64_t u) { return u % 2 == 0 ? 0 : l[u / 2]; }

void row_log_softmax(const float* x, int64_t T, int64_t C, std::vector<double>& logp) {
  logp.resize(size_t(T * C));
  for (int64_t t = 0; t < T; ++t) {
    const float* r = x + t * C;
    double m = r[0];
    for (int64_t c = 1; c < C; ++c) m = std::max(m, double(r[c]));
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(double(r[c]) - m);
    const double lse = m + std::log(s);
    for (int64_t c = 0; c < C; ++c) logp[size_t(t * C + c)] = double(r[c]) - lse;
  }
}

// log p(labels | row) by the alpha recursion; fills w.alpha.
double row_alpha(const RowWork& in, const int32_t* l, int64_t S, int64_t T, int64_t C, std::vector<double>& alpha) {
  const int64_t U = 2 * S + 1;
  alpha.assign(size_t(T * U), kLogZero);
  alpha[0] = in.logp[0];
  if (S > 0) alpha[1] = in.logp[size_t(l[0])];
  for (int64_t t = 1; t < T; ++t) {
    const double* prev = &alpha[size_t((t - 1) * U)];
    double* cur = &alpha[size_t(t * U)];
    for (int64_t u = 0; u < U; ++u) {
      const int32_t z = ext(l, u);
      double a = prev[u];
      if (u >= 1) a = log_add(a, prev[u - 1]);
      if (u >= 2 && z != 0 && z != ext(l, u - 2)) a = log_add(a, prev[u - 2]);
      cur[u] = a == kLogZero ? kLogZero : a + in.logp[size_t(t * C + z)];
    }
  }
  const double* last = &alpha[size_t((T - 1) * U)];
  return S > 0 ? log_add(last[U - 1], last[U - 2]) : last[U - 1];
}

void row_beta(const RowWork& in, const int32_t* l, int64_t S, int64_t T, int64_t C, std::vector<double>& beta) {
  const int64_t U = 2 * S + 1;
  beta.assign(size_t(T * U), kLogZero);
  double* last = &beta[size_t((T - 1) * U)];
  last[U - 1] = in.logp[size_t((T - 1) * C)];
  if (S > 0) last[U - 2] = in.logp[size_t((T - 1) * C + l[S - 1])];
  for (int64_t t = T - 2; t >= 0; --t) {
    const double* next = &beta[size_t((t + 1) * U)];
    double* cur = &beta[size_t(t * U)];
    for (int64_t u = 0; u < U; ++u) {
      const int32_t z = ext(l, u);
      double b = next[u];
      if (u + 1 < U) b = log_add(b, next[u + 1]);
      if (u + 2 < U && z != 0 && z != ext(l, u + 2)) b = log_add(b, next[u + 2]);
      cur[u] = b == kLogZero ? kLogZero : b + in.logp[size_t(t * C + z)];
    }
  }
}

RowWork& row_work() {
  thread_local RowWork w;  // grows to the longest row a thread has seen
  return w;
}

}  // namespace

int64_t ctc_min_frames(const int32_t* labels, int64_t n) {
  int64_t frames = n;
  for (int64_t i = 1; i < n; ++i) frames += labels[i] == labels[i - 1];
  return frames;
}

double ctc_loss_forward(const Tensor& logits, const std::vector<int32_t>& frames, const CtcTargets& targets,
                        Tensor& nll) {
  const CtcDims d = check_ctc(logits, frames, targets, "ctc_loss_forward");
  check(nll.defined() && nll.numel() == d.B && nll.device() == logits.device(),
        "ctc_loss_forward: nll " + shape_str(nll.shape()) + " needs one value per row (" + std::to_string(d.B) + ")");
  if (logits.device() == Device::cuda) {
    double sum = 0;
    auto run = [&] {
      LT_ON_CUDA(sum = cuda::ctc_loss_forward(logits.data(), frames.data(), targets.labels.data(),
                                              targets.offsets.data(), nll.data(), d.B, d.T, d.C));
    };
    run();
    return sum;
  }
  float* out = nll.data();
#pragma omp parallel for schedule(dynamic)
  for (int64_t b = 0; b < d.B; ++b) {
    const int32_t* l = targets.labels.data() + targets.offsets[b];
    const int64_t S = targets.length(b), T = frames[b];
    if (T == 0 || T < ctc_min_frames(l, S)) {  // no frames emit nothing with probability 1
      out[b] = T == 0 && S == 0 ? 0.f : std::numeric_limits<float>::infinity();
      continue;
    }
    RowWork& w = row_work();
    row_log_softmax(logits.data() + b * d.T * d.C, T, d.C, w.logp);
    out[b] = float(-row_alpha(w, l, S, T, d.C, w.alpha));
  }
  double sum = 0;
  for (int64_t b = 0; b < d.B; ++b) sum += out[b];
  return sum;
}

void ctc_loss_backward(const Tensor& logits, const std::vector<int32_t>& frames, const CtcTargets& targets,
                       const std::vector<float>& scale, Tensor& dlogits) {
  const CtcDims d = check_ctc(logits, frames, targets, "ctc_loss_backward");
  check(int64_t(scale.size()) == d.B, "ctc_loss_backward: one scale per row");
  check_shape(dlogits, logits.shape(), "ctc_loss_backward dlogits");
  if (logits.device() == Device::cuda) {
    auto run = [&] {
      LT_ON_CUDA(cuda::ctc_loss_backward(logits.data(), frames.data(), targets.labels.data(), targets.offsets.data(),
                                         scale.data(), dlogits.data(), d.B, d.T, d.C));
    };
    run();
    return;
  }
#pragma omp parallel for schedule(dynamic)
  for (int64_t b = 0; b < d.B; ++b) {
    float* g = dlogits.data() + b * d.T * d.C;
    std::fill(g, g + d.T * d.C, 0.f);
    const int32_t* l = targets.labels.data() + targets.offsets[b];
    const int64_t S = targets.length(b), T = frames[b], U = 2 * S + 1, C = d.C;
    if (T == 0 || T < ctc_min_frames(l, S)) continue;
    RowWork& w = row_work();
    row_log_softmax(logits.data() + b * d.T * C, T, C, w.logp);
    const double logp = row_alpha(w, l, S, T, C, w.alpha);
    row_beta(w, l, S, T, C, w.beta);
    // alpha[t][u] + beta[t][u] counts logp[t][z_u] twice: the paths through
    // (t, u) are exp(alpha + beta - logp[t][z_u]).
    for (int64_t t = 0; t < T; ++t) {
      float* gt = g + t * C;
      const double* lp = &w.logp[size_t(t * C)];
      std::vector<double>& occupancy = w.occupancy;
      occupancy.assign(size_t(C), kLogZero);
      for (int64_t u = 0; u < U; ++u) {
        const int32_t z = ext(l, u);
        const double ab = w.alpha[size_t(t * U + u)] + w.beta[size_t(t * U + u)];
        if (ab != kLogZero) occupancy[size_t(z)] = log_add(occupancy[size_t(z)], ab - lp[z]);
      }
      for (int64_t c = 0; c < C; ++c) {
        const double posterior = occupancy[size_t(c)] == kLogZero ? 0.0 : std::exp(occupancy[size_t(c)] - logp);
        gt[c] = float(scale[size_t(b)] * (std::exp(lp[c]) - posterior));
      }
    }
  }
}

}  // namespace lt
