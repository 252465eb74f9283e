// Output heads on the GPU, mirroring lib/heads/*.cpp line for line; the
// mixture's per-element math is theirs (lib/heads/logistic_bins.h).
// Mixture of logistics and the samplers: one thread per row; categorical loss:
// one warp per row. The per-row math runs in double as on the CPU (fp64 is
// full or half rate on the target GPUs, --use_fast_math leaves it exact, and
// the bin mass sigmoid(a) - sigmoid(b) cancels badly in float). The loss sum
// and the first out-of-range target come back in one small status copy, which
// is also the forward pass's only synchronisation.
#include "common/logistic_bins.h"
#include "cuda_check.cuh"
#include "kernels.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;  // grid-stride loops cover any row count

struct LossStatus {
  double sum;
  unsigned long long first_bad_row;  // ~0 when every target is in range
};

unsigned grid_for(long long n, int per_block) {
  unsigned b = blocks_for(n, per_block);
  return b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b);
}

LossStatus* reset_status() {
  auto* s = reinterpret_cast<LossStatus*>(scratch(sizeof(LossStatus) / sizeof(float)));
  const LossStatus init{0.0, ~0ull};
  memcpy_h2d(s, &init, sizeof init);
  return s;
}

// Returns the loss sum, or throws with the CPU's message for the first bad target.
double read_status(const LossStatus* s, const int32_t* targets, const char* what,
                   const char* expected) {
  LossStatus h;
  memcpy_d2h(&h, s, sizeof h);
  if (h.first_bad_row != ~0ull) {
    int32_t t = 0;
    memcpy_d2h(&t, targets + h.first_bad_row, sizeof t);
    throw lt::Error(std::string(what) + ": target " + std::to_string(t) + " at row " +
                    std::to_string(h.first_bad_row) + " " + expected);
  }
  return h.sum;
}

// Row r's target when it is one of the n classes; otherwise the row is
// recorded (by the lane that reports: the lowest bad row wins) and -1 returned.
__device__ int32_t checked_target(const int32_t* targets, long long r, int n, bool report, LossStatus* status) {
  const int32_t t = targets[r];
  if (t >= 0 && t < n) return t;
  if (report) atomicMin(&status->first_bad_row, (unsigned long long)r);
  return -1;
}

// ---- mixture of logistics ----------------------------------------------------

// nll of one row, logsumexp over components kept online (no per-row arrays).
__device__ double mol_row_nll(const float* p, int K, double y, double lse_logits) {
  double m = -INFINITY, s = 0;
  for (int k = 0; k < K; ++k) {
    const double l = mol::bin_log_prob(y, p[K + k], p[2 * K + k]).value + p[k] - lse_logits;
    if (l > m) {
      s = s * exp(m - l) + 1;
      m = l;
    } else {
      s += exp(l - m);
    }
  }
  return -(m + log(s));
}

__global__ void mol_forward_kernel(const float* params, const int32_t* targets, float* nll,
                                   long long rows, int K, LossStatus* status) {
  double local = 0;
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
       r += (long long)gridDim.x * blockDim.x) {
    const int32_t t = checked_target(targets, r, kMolNumClasses, true, status);
    if (t < 0) continue;
    const float* p = params + r * 3 * K;
    const double l = mol_row_nll(p, K, mol::target_value(t), mol::log_sum_exp(p, K));
    nll[r] = float(l);
    local += l;
  }
  const double s = block_sum(local);
  if (threadIdx.x == 0) atomicAdd(&status->sum, s);
}

__global__ void mol_backward_kernel(const float* params, const int32_t* targets, float scale,
                                    float* dparams, long long rows, int K, LossStatus* status) {
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
       r += (long long)gridDim.x * blockDim.x) {
    const int32_t t = checked_target(targets, r, kMolNumClasses, true, status);
    if (t < 0) continue;
    const float* p = params + r * 3 * K;
    float* g = dparams + r * 3 * K;
    const double y = mol::target_value(t), lse_logits = mol::log_sum_exp(p, K);
    const double nll = mol_row_nll(p, K, y, lse_logits);
    for (int k = 0; k < K; ++k) {  // pi - w for the logits, -w * dlogP for the rest
      const mol::BinLogProb b = mol::bin_log_prob(y, p[K + k], p[2 * K + k]);
      const double pi = exp(p[k] - lse_logits), w = exp(b.value + p[k] - lse_logits + nll);
      g[k] = float(scale * (pi - w));
      g[K + k] = float(-scale * w * b.d_mean);
      g[2 * K + k] = float(-scale * w * b.d_log_scale);
    }
  }
}

__global__ void mol_sample_kernel(const float* params, unsigned long long seed, long long step,
                                  int32_t* out, long long rows, int K) {
  for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < rows;
       b += (long long)gridDim.x * blockDim.x)
    out[b] = mol::draw_byte(params + b * 3 * K, K, seed, step, b);
}

// ---- categorical ---------------------------------------------------------------

// A warp's row of logits: its max m and sum_j exp(x_j - m) in double, on every lane.
__device__ void warp_softmax_stats(const float* x, int V, int lane, float& m, double& s) {
  m = -INFINITY;
  for (int j = lane; j < V; j += 32) m = fmaxf(m, x[j]);
  m = warp_max(m);
  s = 0;
  for (int j = lane; j < V; j += 32) s += exp(double(x[j]) - m);
  s = warp_sum(s);
}

__global__ void categorical_forward_kernel(const float* logits, const int32_t* targets, float* nll,
                                           long long rows, int V, LossStatus* status) {
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  double local = 0;
  for (long long r = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warps) {
    const int32_t t = checked_target(targets, r, V, lane == 0, status);
    if (t < 0) continue;
    const float* x = logits + r * V;
    float m;
    double s;
    warp_softmax_stats(x, V, lane, m, s);
    if (lane == 0) {
      const double l = log(s) + m - x[t];
      nll[r] = float(l);
      local += l;
    }
  }
  const double total = block_sum(local);
  if (threadIdx.x == 0) atomicAdd(&status->sum, total);
}

__global__ void categorical_backward_kernel(const float* logits, const int32_t* targets,
                                            float scale, float* dlogits, long long rows, int V,
                                            LossStatus* status) {
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long r = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
       r += warps) {
    const int32_t t = checked_target(targets, r, V, lane == 0, status);
    if (t < 0) continue;
    const float* x = logits + r * V;
    float* g = dlogits + r * V;
    float m;
    double s;
    warp_softmax_stats(x, V, lane, m, s);
    const double scale_over_z = scale / s;
    for (int j = lane; j < V; j += 32)  // scale * (softmax - onehot)
      g[j] = float(exp(double(x[j]) - m) * scale_over_z - (j == t ? double(scale) : 0.0));
  }
}

__global__ void categorical_sample_kernel(const float* logits, unsigned long long seed,
                                          long long step, int32_t* out, long long rows, int V) {
  for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < rows;
       b += (long long)gridDim.x * blockDim.x)
    out[b] = mol::draw_class(logits + b * V, V, seed, step, b);
}

constexpr const char* kNotAByte = "is not a byte (0..255)";

std::string outside_classes(int64_t V) {
  return "is outside the " + std::to_string(V) + " classes";
}

}  // namespace

double mol_loss_forward(const float* params, const int32_t* targets, float* nll, int64_t rows,
                        int64_t K) {
  LossStatus* status = reset_status();
  mol_forward_kernel<<<grid_for(rows, kThreads), kThreads, 0, stream()>>>(params, targets, nll, rows, int(K), status);
  LT_CUDA_LAUNCH_CHECK();
  return read_status(status, targets, "mol_loss_forward", kNotAByte);
}

void mol_loss_backward(const float* params, const int32_t* targets, float scale, float* dparams,
                       int64_t rows, int64_t K) {
  LossStatus* status = reset_status();
  mol_backward_kernel<<<grid_for(rows, kThreads), kThreads, 0, stream()>>>(params, targets, scale, dparams, rows,
                                                              int(K), status);
  LT_CUDA_LAUNCH_CHECK();
  read_status(status, targets, "mol_loss_backward", kNotAByte);
}

void mol_sample(const float* params, uint64_t seed, int64_t step, int32_t* out, int64_t rows,
                int64_t K) {
  mol_sample_kernel<<<grid_for(rows, kThreads), kThreads, 0, stream()>>>(params, seed, step, out, rows, int(K));
  LT_CUDA_LAUNCH_CHECK();
}

double categorical_loss_forward(const float* logits, const int32_t* targets, float* nll,
                                int64_t rows, int64_t V) {
  LossStatus* status = reset_status();
  categorical_forward_kernel<<<grid_for(rows, kThreads / 32), kThreads, 0, stream()>>>(logits, targets, nll, rows,
                                                                          int(V), status);
  LT_CUDA_LAUNCH_CHECK();
  return read_status(status, targets, "categorical_loss_forward", outside_classes(V).c_str());
}

void categorical_loss_backward(const float* logits, const int32_t* targets, float scale,
                               float* dlogits, int64_t rows, int64_t V) {
  LossStatus* status = reset_status();
  categorical_backward_kernel<<<grid_for(rows, kThreads / 32), kThreads, 0, stream()>>>(logits, targets, scale,
                                                                           dlogits, rows, int(V), status);
  LT_CUDA_LAUNCH_CHECK();
  read_status(status, targets, "categorical_loss_backward", outside_classes(V).c_str());
}

void categorical_sample(const float* logits, uint64_t seed, int64_t step, int32_t* out,
                        int64_t rows, int64_t V) {
  categorical_sample_kernel<<<grid_for(rows, kThreads), kThreads, 0, stream()>>>(logits, seed, step, out, rows,
                                                                    int(V));
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
