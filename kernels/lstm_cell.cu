// The Bi-LSTM's cell on the GPU: one thread per (row, hidden unit) of a
// step, reading its four gates; the recurrent products around it are
// cuBLAS's (lib/model/bilstm.cpp). The gates' math is common/lstm_gates.h,
// the CPU's too.
#include <algorithm>

#include "common/lstm_gates.h"
#include "cuda_check.cuh"
#include "lstm_cell.h"

namespace lt::kernels {
namespace {

constexpr int kThreads = 256;
unsigned grid_for(int64_t n) { return std::min<unsigned>(blocks_for(n, kThreads), 1u << 16); }

struct DeviceMath {
  static __device__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
  static __device__ float tanh(float x) { return tanhf(x); }
};

__global__ void forward_kernel(float* gates, const float* rec, const float* c_prev, const int* lengths, long long t,
                               float* c, float* h, float* out, long long out_cols, long long first, long long B,
                               long long H) {
  const long long n = B * H;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    const long long r = e / H, j = e % H;
    float* a = gates + r * 4 * H;
    const float* q = rec + r * 4 * H;
    float ct = 0.f, ht = 0.f;
    if (t < lengths[r]) {
      lstm::gates_forward<DeviceMath>(a, q, H, j, c_prev[e], ct, ht);
    }
    c[e] = ct;
    h[e] = ht;
    out[r * out_cols + first + j] = ht;
  }
}

__global__ void backward_kernel(const float* gates, const float* c, const float* c_prev, const float* dh,
                                const float* dout, long long dout_cols, long long first, const int* lengths,
                                long long t, float* dc, float* dgates, long long B, long long H) {
  const long long n = B * H;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    const long long r = e / H, j = e % H;
    float* da = dgates + r * 4 * H;
    if (t >= lengths[r]) {
      da[j] = da[H + j] = da[2 * H + j] = da[3 * H + j] = 0.f;
      dc[e] = 0.f;
      continue;
    }
    const float* a = gates + r * 4 * H;
    const float i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j], tc = tanhf(c[e]);
    lstm::gates_backward(i, f, g, o, tc, dh[e] + dout[r * dout_cols + first + j], dc[e], c_prev[e], da, H, j);
  }
}

}  // namespace

void lstm_cell_forward(float* gates, const float* rec, const float* c_prev, const int32_t* lengths, int64_t t,
                       float* c, float* h, float* out, int64_t out_cols, int64_t first, int64_t B, int64_t H) {
  if (B * H == 0) return;
  forward_kernel<<<grid_for(B * H), kThreads, 0, stream()>>>(gates, rec, c_prev, lengths, t, c, h, out, out_cols, first, B, H);
  LT_CUDA_LAUNCH_CHECK();
}

void lstm_cell_backward(const float* gates, const float* c, const float* c_prev, const float* dh, const float* dout,
                        int64_t dout_cols, int64_t first, const int32_t* lengths, int64_t t, float* dc, float* dgates,
                        int64_t B, int64_t H) {
  if (B * H == 0) return;
  backward_kernel<<<grid_for(B * H), kThreads, 0, stream()>>>(gates, c, c_prev, dh, dout, dout_cols, first, lengths, t, dc,
                                                 dgates, B, H);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
