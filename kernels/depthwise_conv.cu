// Depthwise convolution over positions: one thread per output element for y
// and dx (consecutive threads, consecutive channels: coalesced), and one
// block per channel for its taps' and bias's gradients, each thread summing
// a stride of positions before a shared-memory reduction. A continued causal
// convolution writes its outputs before one thread per (row, channel) shifts
// that channel's window, so no output reads a replaced slot.
#include <algorithm>

#include "cuda_check.cuh"
#include "depthwise_conv.h"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxTaps = 31;  // the reduction keeps K + 1 sums per thread in shared memory (32 KB)

__device__ long long row_length(const int32_t* lengths, long long b, long long L) {
  if (!lengths) return L;
  const long long n = lengths[b];
  return n < 0 ? 0 : (n > L ? L : n);
}

__global__ void forward_kernel(const float* x, const float* w, const float* bias, const int32_t* lengths, float* y,
                               long long B, long long L, long long C, int K, long long P) {
  const long long n_all = B * L * C;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n_all; e += (long long)gridDim.x * blockDim.x) {
    const long long c = e % C, bt = e / C, t = bt % L, b = bt / L, n = row_length(lengths, b, L);
    if (t >= n) {
      y[e] = 0.f;
      continue;
    }
    float s = bias[c];
    for (int k = 0; k < K; ++k) {
      const long long u = t + k - P;
      if (u >= 0 && u < n) s += w[c * K + k] * x[(b * L + u) * C + c];
    }
    y[e] = s;
  }
}

__global__ void dx_kernel(const float* w, const int32_t* lengths, const float* dy, float* dx, long long B, long long L,
                          long long C, int K, long long P) {
  const long long n_all = B * L * C;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n_all; e += (long long)gridDim.x * blockDim.x) {
    const long long c = e % C, bt = e / C, t = bt % L, b = bt / L, n = row_length(lengths, b, L);
    float s = 0.f;
    if (t < n)
      for (int k = 0; k < K; ++k) {
        const long long u = t - k + P;  // the output that read x[t] through tap k
        if (u >= 0 && u < n) s += w[c * K + k] * dy[(b * L + u) * C + c];
      }
    dx[e] = s;
  }
}

// Block c: dw[c, k] += sum dy[b, t, c] x[b, t + k - P, c], dbias[c] += sum dy[b, t, c].
__global__ void dw_kernel(const float* x, const int32_t* lengths, const float* dy, float* dw, float* dbias, long long B,
                          long long L, long long C, int K, long long P) {
  __shared__ float sums[kThreads * (kMaxTaps + 1)];
  const long long c = blockIdx.x;
  float acc[kMaxTaps + 1];
  for (int k = 0; k <= K; ++k) acc[k] = 0.f;
  for (long long bt = threadIdx.x; bt < B * L; bt += blockDim.x) {
    const long long t = bt % L, b = bt / L, n = row_length(lengths, b, L);
    if (t >= n) continue;
    const float g = dy[bt * C + c];
    acc[K] += g;
    for (int k = 0; k < K; ++k) {
      const long long u = t + k - P;
      if (u >= 0 && u < n) acc[k] += g * x[(b * L + u) * C + c];
    }
  }
  for (int k = 0; k <= K; ++k) sums[k * kThreads + threadIdx.x] = acc[k];
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      for (int k = 0; k <= K; ++k) sums[k * kThreads + threadIdx.x] += sums[k * kThreads + threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int k = 0; k < K; ++k) dw[c * K + k] += sums[k * kThreads];
    dbias[c] += sums[K * kThreads];
  }
}

// Input i of element b's window (row rows[b] of a pool's, or b) ++ x (W = K - 1 window slots).
__device__ const float* continued_input(const float* x, const float* window, const int64_t* rows, long long b,
                                        long long i, long long L, long long C, long long W) {
  return i < W ? window + ((rows ? (long long)rows[b] : b) * W + i) * C : x + (b * L + i - W) * C;
}

__global__ void continue_kernel(const float* x, const float* w, const float* bias, const float* window,
                                const int64_t* rows, float* y, long long B, long long L, long long C, int K) {
  const long long n_all = B * L * C;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n_all; e += (long long)gridDim.x * blockDim.x) {
    const long long c = e % C, bt = e / C, t = bt % L, b = bt / L;
    if (rows && rows[b] < 0) {  // padding of a batch-size bucket: no window
      y[e] = 0.f;
      continue;
    }
    float s = bias[c];
    for (int k = 0; k < K; ++k) s += w[c * K + k] * continued_input(x, window, rows, b, t + k, L, C, K - 1)[c];
    y[e] = s;
  }
}

// Slot j takes input L + j, which comes after j: ascending j reads no slot already replaced.
__global__ void shift_window_kernel(const float* x, float* window, const int64_t* rows, long long B, long long L,
                                    long long C, int K) {
  const long long W = K - 1;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < B * C; e += (long long)gridDim.x * blockDim.x) {
    const long long c = e % C, b = e / C, r = rows ? (long long)rows[b] : b;
    if (r < 0) continue;
    for (long long j = 0; j < W; ++j)
      window[(r * W + j) * C + c] = continued_input(x, window, rows, b, L + j, L, C, W)[c];
  }
}

unsigned grid_for(int64_t n) { return std::min<unsigned>(blocks_for(n, kThreads), 1u << 16); }

}  // namespace

void depthwise_conv_forward(const float* x, const float* w, const float* bias, const int32_t* lengths, float* y,
                            int64_t B, int64_t L, int64_t C, int64_t K, int64_t P) {
  if (B * L * C == 0) return;
  forward_kernel<<<grid_for(B * L * C), kThreads, 0, stream()>>>(x, w, bias, lengths, y, B, L, C, int(K), P);
  LT_CUDA_LAUNCH_CHECK();
}

void depthwise_conv_backward(const float* x, const float* w, const int32_t* lengths, const float* dy, float* dx,
                             float* dw, float* dbias, int64_t B, int64_t L, int64_t C, int64_t K, int64_t P) {
  if (B * L * C == 0) return;
  if (K > kMaxTaps)
    throw lt::Error("depthwise convolution on CUDA: at most " + std::to_string(kMaxTaps) + " taps, got " +
                    std::to_string(K));
  dx_kernel<<<grid_for(B * L * C), kThreads, 0, stream()>>>(w, lengths, dy, dx, B, L, C, int(K), P);
  LT_CUDA_LAUNCH_CHECK();
  dw_kernel<<<unsigned(C), kThreads, 0, stream()>>>(x, lengths, dy, dw, dbias, B, L, C, int(K), P);
  LT_CUDA_LAUNCH_CHECK();
}

void depthwise_conv_continue(const float* x, const float* w, const float* bias, float* window, float* y, int64_t B,
                             int64_t L, int64_t C, int64_t K, const int64_t* rows) {
  if (B * L * C == 0) return;
  continue_kernel<<<grid_for(B * L * C), kThreads, 0, stream()>>>(x, w, bias, window, rows, y, B, L, C, int(K));
  LT_CUDA_LAUNCH_CHECK();
  if (K == 1) return;
  shift_window_kernel<<<grid_for(B * C), kThreads, 0, stream()>>>(x, window, rows, B, L, C, int(K));
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
