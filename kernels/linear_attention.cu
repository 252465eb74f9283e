// Non-causal linear attention (eq. 4-6) on the GPU, forward and backward; the
// algebra is in lib/attention/linear_attention.cpp. Products are cuBLAS
// strided batched sgemms over the H heads of one batch element (a head of
// [N,S,H,F] sits at offset h*F with leading dimension H*F); the key sums
// z = phi(K)^T 1 are one gemv per batch element against a vector of ones.
// Batch elements loop on the host because each has its own key count, which
// becomes the inner dimension of the products (padded keys are never read).
// cuBLAS is column-major: a row-major [r, c] matrix with leading dimension ld
// is a column-major [c, r] one ("col" below) with the same ld.
// In self-attention (L == S) the queries l >= key_lengths[n] are padding:
// their output rows are zeroed after the products, and in backward their G
// rows and c entries are zeroed before dA and dz sum over them, which also
// leaves their dphi(q) rows zero.
#include <algorithm>

#include "common/constants.h"
#include "cuda_check.cuh"
#include "kernels.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kWarpsPerBlock = 8;

unsigned row_blocks(long long rows) { return std::min<unsigned>(blocks_for(rows, kWarpsPerBlock), 1u << 20); }
unsigned elem_blocks(long long n) { return std::min<unsigned>(blocks_for(n, 256), 1u << 20); }

// phi(q_r) . z for row r of [N*L*H] (z of that row's (n, h)), on every lane.
__device__ float normaliser(const float* fq, const float* z, long long r, int L, int H, int F) {
  const long long n = r / ((long long)L * H), h = r % H;
  const float* qr = fq + r * F;
  const float* zr = z + (n * H + h) * F;
  float d = 0.f;
  for (int f = threadIdx.x % 32; f < F; f += 32) d += qr[f] * zr[f];
  return warp_sum(d) + kLinearAttentionEps;
}

__global__ void fill_ones_kernel(float* x, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    x[i] = 1.f;
}

// out_r /= phi(q_r) . z + eps, one warp per row of [N*L*H].
__global__ void normalise_kernel(const float* fq, const float* z, float* out, long long rows, int L, int H, int F,
                                 int M) {
  const long long stride = (long long)gridDim.x * kWarpsPerBlock;
  for (long long r = blockIdx.x * (long long)kWarpsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    const float inv = 1.f / normaliser(fq, z, r, L, H, F);
    for (int m = threadIdx.x % 32; m < M; m += 32) out[r * M + m] *= inv;
  }
}

// Per row: G = dout / den over num in place, c[n, h, l] = -(G . num) / den.
__global__ void output_grad_kernel(const float* fq, const float* z, const float* dout, float* G, float* c,
                                   long long rows, int L, int H, int F, int M) {
  const long long stride = (long long)gridDim.x * kWarpsPerBlock;
  for (long long r = blockIdx.x * (long long)kWarpsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    const float inv = 1.f / normaliser(fq, z, r, L, H, F);
    float acc = 0.f;
    for (int m = threadIdx.x % 32; m < M; m += 32) {
      const float g = dout[r * M + m] * inv;
      acc += g * G[r * M + m];
      G[r * M + m] = g;
    }
    acc = warp_sum(acc);
    if (threadIdx.x % 32 == 0) {
      const long long n = r / ((long long)L * H), l = (r / H) % L, h = r % H;
      c[(n * H + h) * L + l] = -acc * inv;
    }
  }
}

// dfq[n, l, h, :] += c[n, h, l] z[n, h, :]
__global__ void add_normaliser_grad_kernel(float* dfq, const float* c, const float* z, long long total, int L, int H,
                                           int F) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / F, f = i % F;
    const long long n = r / ((long long)L * H), l = (r / H) % L, h = r % H;
    dfq[i] += c[(n * H + h) * L + l] * z[(n * H + h) * F + f];
  }
}

// dfk rows [len, HF] += dz [HF] (broadcast over rows).
__global__ void add_rows_kernel(float* x, const float* row, long long total, int width) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x)
    x[i] += row[i % width];
}

struct Dims {
  int64_t N, L, S, H, F, M;
  int HF() const { return (int)(H * F); }
  int HM() const { return (int)(H * M); }
};

// A [N,H,F,M] = phi(K)^T V and z [N,H,F] = phi(K)^T 1 over each element's keys (eq. 5).
void key_value_sums(const float* fk, const float* v, const int32_t* key_lengths, const float* ones, float* A,
                    float* z, const Dims& d) {
  const float one = 1.f, zero = 0.f;
  const long long FM = d.F * d.M;
  for (int64_t n = 0; n < d.N; ++n) {
    const int len = key_lengths ? key_lengths[n] : (int)d.S;
    float* An = A + n * d.H * FM;
    float* zn = z + n * d.H * d.F;
    if (len == 0) {
      LT_CUDA_CHECK(cudaMemsetAsync(An, 0, sizeof(float) * d.H * FM, stream()));
      LT_CUDA_CHECK(cudaMemsetAsync(zn, 0, sizeof(float) * d.H * d.F, stream()));
      continue;
    }
    const float* fkn = fk + n * d.S * d.HF();
    // A col [M, F] = V phi(K)^T with V col [M, len], phi(K) col [F, len]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_T, (int)d.M, (int)d.F, len, &one,
                                              v + n * d.S * d.HM(), d.HM(), d.M, fkn, d.HF(), d.F, &zero, An,
                                              (int)d.M, FM, (int)d.H));
    // z [H*F] = phi(K) 1 with phi(K) of all heads col [H*F, len]
    LT_CUBLAS_CHECK(cublasSgemv(cublas(), CUBLAS_OP_N, d.HF(), len, &one, fkn, d.HF(), ones, 1, &zero, zn, 1));
  }
}

// dst col [M, L] per head = A phi(Q): the numerators A^T phi(q_l), rows [N,L,H,M].
void numerators(const float* fq, const float* A, float* dst, const Dims& d) {
  const float one = 1.f, zero = 0.f;
  for (int64_t n = 0; n < d.N; ++n)
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, (int)d.M, (int)d.L, (int)d.F,
                                              &one, A + n * d.H * d.F * d.M, (int)d.M, d.F * d.M,
                                              fq + n * d.L * d.HF(), d.HF(), d.F, &zero, dst + n * d.L * d.HM(),
                                              d.HM(), d.M, (int)d.H));
}

// The padded query rows of element n (none without lengths or when L != S).
int64_t padded_queries(const int32_t* key_lengths, int64_t n, const Dims& d) {
  return key_lengths && d.L == d.S ? d.L - key_lengths[n] : 0;
}

// Zero rows [L - pad, L) of element n of x [N, L, H, M]: padded queries.
void zero_padded_rows(float* x, const int32_t* key_lengths, const Dims& d, int64_t width) {
  for (int64_t n = 0; n < d.N; ++n) {
    const int64_t pad = padded_queries(key_lengths, n, d);
    if (pad > 0)
      LT_CUDA_CHECK(cudaMemsetAsync(x + ((n + 1) * d.L - pad) * d.H * width, 0, sizeof(float) * pad * d.H * width, stream()));
  }
}

float* ones_vector(float* at, int64_t n) {
  if (n > 0) {
    fill_ones_kernel<<<elem_blocks(n), 256, 0, stream()>>>(at, n);
    LT_CUDA_LAUNCH_CHECK();
  }
  return at;
}

}  // namespace

void linear_attention_forward(const float* fq, const float* fk, const float* v, const int32_t* key_lengths,
                              float* out, int64_t N, int64_t L, int64_t S, int64_t H, int64_t F, int64_t M) {
  const Dims d{N, L, S, H, F, M};
  if (N * L * H * M == 0) return;
  float* A = scratch((size_t)(N * H * F * M + N * H * F + S));
  float* z = A + N * H * F * M;
  const float* ones = ones_vector(z + N * H * F, S);
  key_value_sums(fk, v, key_lengths, ones, A, z, d);
  numerators(fq, A, out, d);
  normalise_kernel<<<row_blocks(N * L * H), kWarpsPerBlock * 32, 0, stream()>>>(fq, z, out, N * L * H, (int)L, (int)H, (int)F,
                                                                   (int)M);
  LT_CUDA_LAUNCH_CHECK();
  zero_padded_rows(out, key_lengths, d, M);
}

void linear_attention_backward(const float* fq, const float* fk, const float* v, const int32_t* key_lengths,
                               const float* dout, float* dfq, float* dfk, float* dv, int64_t N, int64_t L,
                               int64_t S, int64_t H, int64_t F, int64_t M) {
  const Dims d{N, L, S, H, F, M};
  if (N * L * S * H * F * M == 0) {  // an empty side: every gradient is zero
    LT_CUDA_CHECK(cudaMemsetAsync(dfq, 0, sizeof(float) * N * L * H * F, stream()));
    LT_CUDA_CHECK(cudaMemsetAsync(dfk, 0, sizeof(float) * N * S * H * F, stream()));
    LT_CUDA_CHECK(cudaMemsetAsync(dv, 0, sizeof(float) * N * S * H * M, stream()));
    return;
  }
  const int64_t FM = F * M, HF = H * F, HM = H * M;
  float* A = scratch((size_t)(N * H * FM + N * HF + S + N * L * HM + N * H * L + H * FM + HF));
  float* z = A + N * H * FM;
  float* G = z + N * HF;
  float* c = G + N * L * HM;
  float* dA = c + N * H * L;  // one batch element's, reused in order on the stream
  float* dz = dA + H * FM;
  const float* ones = ones_vector(dz + HF, S);

  key_value_sums(fk, v, key_lengths, ones, A, z, d);
  numerators(fq, A, G, d);
  output_grad_kernel<<<row_blocks(N * L * H), kWarpsPerBlock * 32, 0, stream()>>>(fq, z, dout, G, c, N * L * H, (int)L, (int)H,
                                                                     (int)F, (int)M);
  LT_CUDA_LAUNCH_CHECK();
  zero_padded_rows(G, key_lengths, d, M);
  for (int64_t n = 0; n < N; ++n) {  // c [N, H, L]: entries l >= L - pad of every head
    const int64_t pad = padded_queries(key_lengths, n, d);
    if (pad > 0)
      LT_CUDA_CHECK(cudaMemset2DAsync(c + n * H * L + (L - pad), sizeof(float) * L, 0, sizeof(float) * pad, H, stream()));
  }

  const float one = 1.f, zero = 0.f;
  for (int64_t n = 0; n < N; ++n) {
    const int len = key_lengths ? key_lengths[n] : (int)S;
    const float* fqn = fq + n * L * HF;
    const float* fkn = fk + n * S * HF;
    const float* Gn = G + n * L * HM;
    float* dfkn = dfk + n * S * HF;
    float* dvn = dv + n * S * HM;
    // dphi(Q) col [F, L] = A^T G with A col [M, F], G col [M, L]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, (int)F, (int)L, (int)M, &one,
                                              A + n * H * FM, (int)M, FM, Gn, (int)HM, M, &zero, dfq + n * L * HF,
                                              (int)HF, F, (int)H));
    // dA col [M, F] = G phi(Q)^T with phi(Q) col [F, L]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_T, (int)M, (int)F, (int)L, &one, Gn,
                                              (int)HM, M, fqn, (int)HF, F, &zero, dA, (int)M, FM, (int)H));
    // dz col [F, 1] = phi(Q) c with c[n, h, :] col [L, 1]
    LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, (int)F, 1, (int)L, &one, fqn,
                                              (int)HF, F, c + n * H * L, (int)L, L, &zero, dz, (int)F, F, (int)H));
    if (len > 0) {
      // dphi(K) col [F, len] = dA^T V with V col [M, len]
      LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, (int)F, len, (int)M, &one, dA,
                                                (int)M, FM, v + n * S * HM, (int)HM, M, &zero, dfkn, (int)HF, F,
                                                (int)H));
      // dV col [M, len] = dA phi(K) with phi(K) col [F, len]
      LT_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, (int)M, len, (int)F, &one, dA,
                                                (int)M, FM, fkn, (int)HF, F, &zero, dvn, (int)HM, M, (int)H));
      add_rows_kernel<<<elem_blocks(len * HF), 256, 0, stream()>>>(dfkn, dz, len * HF, (int)HF);
      LT_CUDA_LAUNCH_CHECK();
    }
    if (len < S) {  // padded keys: no gradient
      LT_CUDA_CHECK(cudaMemsetAsync(dfkn + len * HF, 0, sizeof(float) * (S - len) * HF, stream()));
      LT_CUDA_CHECK(cudaMemsetAsync(dvn + len * HM, 0, sizeof(float) * (S - len) * HM, stream()));
    }
  }
  add_normaliser_grad_kernel<<<elem_blocks(N * L * HF), 256, 0, stream()>>>(dfq, c, z, N * L * HF, (int)L, (int)H, (int)F);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace lt::kernels
