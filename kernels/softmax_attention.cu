// Softmax attention (eq. 2) on the GPU. The products are cuBLAS strided
// batched sgemms over the H heads of one batch element: a head of q [N,L,H,E]
// is the matrix at offset h*E with leading dimension H*E, so heads are never
// copied out. cuBLAS is column-major: a row-major [r, c] matrix with leading
// dimension ld is a column-major [c, r] one with the same ld, and each call
// below is written for those column-major views (noted as "col").
// Row softmaxes are one warp per row, grid-stride; the decoding step is one
// block per (batch, head) with the scores in global scratch (t may be long).
#include <algorithm>
#include <cmath>

#include "common/softmax_row.h"
#include "cuda_check.cuh"
#include "kernels.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kStepThreads = 256;

unsigned row_blocks(long long rows) { return std::min<unsigned>(blocks_for(rows, kWarpsPerBlock), 1u << 20); }

// The keys row r = (n H + h) L + l of probs may attend to: the first
// key_lengths[n] (clamped to [0, S]), and keys s <= l under the causal mask;
// none for a padded query row (l >= key_lengths[n] in self-attention, L == S).
__device__ int valid_keys(const int32_t* key_lengths, long long r, int L, int H, int S, bool causal) {
  const int l = (int)(r % L);
  int valid = causal ? l + 1 : S;
  if (key_lengths) {
    const int len = min(max(key_lengths[r / ((long long)L * H)], 0), S);
    valid = L == S && l >= len ? 0 : min(valid, len);
  }
  return valid;
}

// In place over probs rows [rows = N*H*L, S]: softmax of the first `valid`
// entries, zero after them (the whole row when valid is 0).
__global__ void masked_softmax_kernel(float* p, const int32_t* key_lengths, long long rows, int L, int H, int S,
                                      bool causal) {
  const int lane = threadIdx.x % 32;
  const long long stride = (long long)gridDim.x * kWarpsPerBlock;
  for (long long r = blockIdx.x * (long long)kWarpsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    float* row = p + r * S;
    const int valid = valid_keys(key_lengths, r, L, H, S, causal);
    const float sum = softmax_exp_row(row, row, valid, WarpLanes{lane});
    const float inv = valid > 0 ? 1.f / sum : 0.f;
    for (int s = lane; s < S; s += 32) row[s] = s < valid ? row[s] * inv : 0.f;
  }
}

// dP -> dA in place per row: dA_s = P_s (dP_s - sum_j P_j dP_j). Masked keys
// have P_s = 0 and so get dA_s = 0.
__global__ void softmax_grad_kernel(const float* p, float* dp, long long rows, int S) {
  const int lane = threadIdx.x % 32;
  const long long stride = (long long)gridDim.x * kWarpsPerBlock;
  for (long long r = blockIdx.x * (long long)kWarpsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    softmax_backward_row(p + r * S, dp + r * S, dp + r * S, S, WarpLanes{lane});
  }
}

// Reduces x over the block (max or sum); every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float x, float* shared32) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  x = kMax ? warp_max(x) : warp_sum(x);
  if (lane == 0) shared32[warp] = x;
  __syncthreads();
  float y = lane < warps ? shared32[lane] : (kMax ? -INFINITY : 0.f);
  y = kMax ? warp_max(y) : warp_sum(y);
  __syncthreads();  // shared32 is reused by the next reduction
  return y;
}

// One block per (n, h). Scores for keys 0..t live in scores[nh * (t + 1) ...].
__global__ void softmax_step_kernel(const float* q, const float* k, const float* v, float* k_cache,
                                    float* v_cache, float* out, float* scores, int H, int T, int E, int M, int t,
                                    float temp) {
  __shared__ float shared32[32];
  const long long nh = blockIdx.x;
  const long long n = nh / H, h = nh % H;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const long long HE = (long long)H * E, HM = (long long)H * M;
  const float* kc = k_cache + n * T * HE + h * E;  // key s at kc + s * HE
  float* vc = v_cache + n * T * HM + h * M;
  const int keys = t + 1;
  float* sc = scores + nh * keys;

  for (int i = threadIdx.x; i < E; i += blockDim.x) k_cache[(n * T + t) * HE + h * E + i] = k[nh * E + i];
  for (int i = threadIdx.x; i < M; i += blockDim.x) vc[(long long)t * HM + i] = v[nh * M + i];
  __syncthreads();  // the cache row t is read below by other threads

  const float* qh = q + nh * E;
  float m = -INFINITY;
  for (int s = warp; s < keys; s += warps) {
    float d = 0.f;
    for (int i = lane; i < E; i += 32) d += qh[i] * kc[s * HE + i];
    d = warp_sum(d) * temp;
    if (lane == 0) sc[s] = d;
    m = fmaxf(m, d);
  }
  m = block_reduce<true>(m, shared32);  // its __syncthreads also publishes sc
  float sum = 0.f;
  for (int s = threadIdx.x; s < keys; s += blockDim.x) {
    const float e = expf(sc[s] - m);
    sc[s] = e;
    sum += e;
  }
  const float inv = 1.f / block_reduce<false>(sum, shared32);
  for (int i = threadIdx.x; i < M; i += blockDim.x) {
    float acc = 0.f;
    for (int s = 0; s < keys; ++s) acc += sc[s] * vc[s * HM + i];
    out[nh * M + i] = acc * inv;
  }
}

}  // namespace

// Masked keys and padded rows have probability 0, so P V leaves padded output
// rows zero; padded values are multiplied by those zeros (they must be finite).
void softmax_attention_forward(const float* q, const float* k, const float* v, const int32_t* key_lengths,
                               float* probs, float* out, int64_t N, int64_t L, int64_t S, int64_t H, int64_t E,
                               int64_t M, bool causal) {
  if (N * H * L == 0) return;
  const float temp = 1.f / std::sqrt((float)E), one = 1.f, zero = 0.f;
  const int HE = (int)(H * E), HM = (int)(H * M);
  const long long LS = (long long)L * S;
  for (int64_t n = 0; n < N; ++n) {
    // scores col [S, L] = K^T Q with K col [E, S], Q col [E, L]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, (int)S, (int)L, (int)E, &temp,
                                              k + n * S * HE, HE, E, q + n * L * HE, HE, E, &zero,
                                              probs + n * H * LS, (int)S, LS, (int)H));
  }
  masked_softmax_kernel<<<row_blocks(N * H * L), kWarpsPerBlock * 32, 0, stream()>>>(probs, key_lengths, N * H * L, (int)L,
                                                                      (int)H, (int)S, causal);
  LT_CUDA_LAUNCH_CHECK();
  for (int64_t n = 0; n < N; ++n) {
    // out col [M, L] = V P with V col [M, S], P col [S, L]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, (int)M, (int)L, (int)S, &one,
                                              v + n * S * HM, HM, M, probs + n * H * LS, (int)S, LS, &zero,
                                              out + n * L * HM, HM, M, (int)H));
  }
}

void softmax_attention_backward(const float* q, const float* k, const float* v, const float* probs,
                                const float* dout, float* dq, float* dk, float* dv, int64_t N, int64_t L,
                                int64_t S, int64_t H, int64_t E, int64_t M) {
  if (N * H == 0) return;
  if (L == 0) {  // no queries: nothing reaches the keys and values
    LT_CUDA_CHECK(cudaMemsetAsync(dk, 0, sizeof(float) * N * S * H * E, stream()));
    LT_CUDA_CHECK(cudaMemsetAsync(dv, 0, sizeof(float) * N * S * H * M, stream()));
    return;
  }
  const float temp = 1.f / std::sqrt((float)E), one = 1.f, zero = 0.f;
  const int HE = (int)(H * E), HM = (int)(H * M);
  const long long LS = (long long)L * S;
  float* dP = scratch((size_t)(H * LS));  // one batch element's dP, reused in order on the stream
  for (int64_t n = 0; n < N; ++n) {
    const float* qn = q + n * L * HE;
    const float* kn = k + n * S * HE;
    const float* vn = v + n * S * HM;
    const float* gn = dout + n * L * HM;
    const float* pn = probs + n * H * LS;
    // dV col [M, S] = dO P^T with dO col [M, L], P col [S, L]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_T, (int)M, (int)S, (int)L, &one, gn,
                                              HM, M, pn, (int)S, LS, &zero, dv + n * S * HM, HM, M, (int)H));
    // dP col [S, L] = V^T dO with V col [M, S]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, (int)S, (int)L, (int)M, &one, vn,
                                              HM, M, gn, HM, M, &zero, dP, (int)S, LS, (int)H));
    softmax_grad_kernel<<<row_blocks(H * L), kWarpsPerBlock * 32, 0, stream()>>>(pn, dP, H * L, (int)S);
    LT_CUDA_LAUNCH_CHECK();
    // dQ col [E, L] = temp K dA with K col [E, S], dA col [S, L]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, (int)E, (int)L, (int)S, &temp, kn,
                                              HE, E, dP, (int)S, LS, &zero, dq + n * L * HE, HE, E, (int)H));
    // dK col [E, S] = temp Q dA^T with Q col [E, L]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_T, (int)E, (int)S, (int)L, &temp, qn,
                                              HE, E, dP, (int)S, LS, &zero, dk + n * S * HE, HE, E, (int)H));
  }
}

void softmax_attention_step(const float* q, const float* k, const float* v, float* k_cache, float* v_cache,
                            float* out, int64_t N, int64_t T, int64_t H, int64_t E, int64_t M, int64_t t) {
  if (N * H == 0) return;
  float* scores = scratch((size_t)(N * H * (t + 1)));
  softmax_step_kernel<<<(unsigned)(N * H), kStepThreads, 0, stream()>>>(q, k, v, k_cache, v_cache, out, scores, (int)H, (int)T,
                                                           (int)E, (int)M, (int)t, 1.f / std::sqrt((float)E));
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
