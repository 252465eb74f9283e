// Causal linear attention on the GPU (eq. 9-15). Everything is one primitive,
// the causal product
//   out_t = sum_{j<=t} (a_t . b_j) c_j        (reverse: sum over j >= t),
// run as an RNN over the sequence: a block owns a tile of the state
// sum_j b_j c_j^T (kRows feature rows x kCols value columns, in registers),
// stages kSteps positions of a, b, c in shared memory, updates its state and
// reduces its share of out_t over the feature rows. Feature tiles beyond the
// first add into out atomically, so any F and M work.
//
// When batch x heads x tiles cannot fill the GPU (long sequences, small
// batches), the sequence is also cut into S segments run in parallel: a first
// pass sums each segment's state, an exclusive scan over the segments gives
// the state each segment starts from, and a second pass runs the segments
// from those states. Memory: S x F x M per (sequence, head), S ~ SMs / pairs.
//
// Lengths: positions t >= lengths[n] read as zeros in all three operands, so
// they add nothing to the state and their products are exactly zero (and
// normalise to zero outputs). Continuing a state starts the product from
// S' = [S, Z] (the init argument: each segment's start is that plus the sums
// of the segments before it) and has the last segment write the state it
// ends with.
//
// With v' = [v, 1] (a column of ones read on the fly) the product with
// a = fq, b = fk, c = v' gives num' = [num, den - eps] in one pass. With G the
// gradient of num' (G_l = [g_l / den_l, -(g_l . out_l) / den_l]) the backward
// is three more products, as in the CPU version:
//   dfq = causal(G, v', fk),  dfk = reverse(v', G, fq),  dv = reverse(fk, fq, G)[:M].
#include <cuda_bf16.h>

#include <algorithm>
#include <string>

#include "causal_product.cuh"
#include "common/constants.h"
#include "cuda_check.cuh"
#include "kernels.h"
#include "reductions.cuh"

namespace lt::kernels {
namespace {

constexpr int kCols = 32;                           // value columns per block (threadIdx.x)
constexpr int kRowGroups = 8;                       // threadIdx.y
constexpr int kRowsPerThread = 8;                   // state registers per thread
constexpr int kRows = kRowGroups * kRowsPerThread;  // feature rows per block
constexpr int kSteps = 16;                          // positions staged per chunk
constexpr int kThreads = kCols * kRowGroups;
// Blocks resident per SM, which the register budget must allow (at most 85
// registers): at 2, CIFAR's 320 blocks of a product took two waves on an
// H100's 132 SMs instead of one, a training step 100 -> 129 ms.
constexpr int kBlocksPerSM = 3;

// grid (N*H*S, value-column tiles, feature-row tiles), block (kCols, kRowGroups).
// row = (n * L + t) * H + h indexes the [N, L, H] positions. Block x = pair *
// S + segment runs chunks [segment * per, (segment + 1) * per) in processing
// order (from the end when reverse). With sum_only it writes its segment's
// state sum to seg instead of outputs; otherwise it starts from the state seg
// holds for it (when seg is set) and, if final is set, the last segment writes
// the state it ends with to final [pair, inner, out_width].
template <bool sum_only>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
    causal_product_kernel(Operand a, Operand b, Operand c, const int32_t* lengths, float* out, int out_width,
                          long long L, long long H, bool reverse, int S, long long per, float* seg, float* final_state,
                          int inner) {
  __shared__ float sa[kSteps][kRows], sb[kSteps][kRows], sc[kSteps][kCols];
  __shared__ float partial[kSteps][kRowGroups][kCols];
  const long long pair = blockIdx.x / S, segment = blockIdx.x % S;
  const long long n = pair / H, h = pair % H, len = sequence_length(lengths, n, L);
  const int col0 = blockIdx.y * kCols, row0 = blockIdx.z * kRows;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kCols + tx;
  const bool accumulate = gridDim.z > 1;
  // This thread's state entries: rows row0 + ty + r * kRowGroups, column col0 + tx.
  float* my_seg = seg ? seg + (long long)blockIdx.x * inner * out_width : nullptr;
  const int col = col0 + tx;

  float state[kRowsPerThread];
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const int f = row0 + ty + r * kRowGroups;
    state[r] = !sum_only && my_seg && f < inner && col < out_width ? my_seg[(long long)f * out_width + col] : 0.f;
  }

  const long long chunks = (L + kSteps - 1) / kSteps;
  const long long c_begin = segment * per, c_end = min(chunks, c_begin + per);
  for (long long ci = c_begin; ci < c_end; ++ci) {
    // First position of the chunk; in reverse the last chunk starts before 0.
    // Positions outside [0, len) stage zeros: padding leaves the state alone.
    const long long t0 = reverse ? L - (ci + 1) * kSteps : ci * kSteps;
    for (int i = tid; i < kSteps * kRows; i += kThreads) {
      const int s = i / kRows, r = i % kRows, f = row0 + r;
      const long long t = t0 + s;
      const bool ok = t >= 0 && t < len;
      if (!sum_only) sa[s][r] = ok ? a.at((n * L + t) * H + h, f) : 0.f;
      sb[s][r] = ok ? b.at((n * L + t) * H + h, f) : 0.f;
    }
    for (int i = tid; i < kSteps * kCols; i += kThreads) {
      const int s = i / kCols, m = i % kCols;
      const long long t = t0 + s;
      sc[s][m] = t >= 0 && t < len ? c.at((n * L + t) * H + h, col0 + m) : 0.f;
    }
    __syncthreads();

    for (int k = 0; k < kSteps; ++k) {
      const int s = reverse ? kSteps - 1 - k : k;
      const float cv = sc[s][tx];
      float p = 0.f;
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r) {
        const int row = ty + r * kRowGroups;
        state[r] += sb[s][row] * cv;
        if (!sum_only) p += sa[s][row] * state[r];
      }
      if (!sum_only) partial[s][ty][tx] = p;
    }
    __syncthreads();

    if (!sum_only) {
      for (int i = tid; i < kSteps * kCols; i += kThreads) {
        const int s = i / kCols, m = i % kCols, oc = col0 + m;
        const long long t = t0 + s;
        if (t < 0 || t >= L || oc >= out_width) continue;
        float sum = 0.f;
#pragma unroll
        for (int g = 0; g < kRowGroups; ++g) sum += partial[s][g][m];
        float* dst = out + ((n * L + t) * H + h) * out_width + oc;
        if (accumulate)
          atomicAdd(dst, sum);
        else
          *dst = sum;
      }
      __syncthreads();  // the next chunk overwrites the staged operands and partials
    }
  }
  float* end_state = sum_only ? my_seg : (final_state && segment == S - 1 ? final_state + pair * inner * out_width : nullptr);
  if (end_state) {
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int f = row0 + ty + r * kRowGroups;
      if (f < inner && col < out_width) end_state[(long long)f * out_width + col] = state[r];
    }
  }
}

// scan_segments's kernel: a thread per state entry runs along the segments,
// kAhead at a time: their loads are issued together instead of each waiting
// for the store before it (the chunked product scans every chunk of a sequence).
__global__ void segment_scan_kernel(float* seg, const float* init, long long pairs, int S, long long FM) {
  constexpr int kAhead = 8;
  const long long total = pairs * FM;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    float* x = seg + (i / FM) * S * FM + i % FM;
    float run = init ? init[i] : 0.f;
    for (int s0 = 0; s0 < S; s0 += kAhead) {
      float v[kAhead];
#pragma unroll
      for (int k = 0; k < kAhead; ++k)
        if (s0 + k < S) v[k] = x[(long long)(s0 + k) * FM];
#pragma unroll
      for (int k = 0; k < kAhead; ++k)
        if (s0 + k < S) {
          x[(long long)(s0 + k) * FM] = run;
          run += v[k];
        }
    }
  }
}

unsigned grid_for(long long n, int threads) {
  return static_cast<unsigned>(std::min<long long>(blocks_for(n, threads), 1 << 16));
}

int multiprocessors() {
  static const int sms = [] {
    int dev = 0, n = 0;
    LT_CUDA_CHECK(cudaGetDevice(&dev));
    LT_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  return sms;
}

// out[:, :out_width] of the causal (or reverse) product; a and b must have
// the same logical width. tf32: a product from a zero state that keeps none
// (training's) runs in chunks on the tensor cores where the widths allow
// (causal_product_chunks.cu); every other one as here, in fp32.
void causal_product(Operand a, Operand b, Operand c, float* out, int64_t out_width, int64_t N, int64_t L,
                    int64_t H, bool reverse, bool tf32, const ProductState& st = {}) {
  const bool from_zero = !st.init && !st.final_state;
  if (tf32 && from_zero && causal_product_chunked(a, b, c, out, out_width, N, L, H, reverse, st.lengths)) return;
  const int64_t inner = a.logical_width(), pairs = N * H;
  const int64_t col_tiles = (out_width + kCols - 1) / kCols, row_tiles = (inner + kRows - 1) / kRows;
  if (pairs > 0x7fffffffLL || col_tiles > 65535 || row_tiles > 65535)
    throw lt::Error("causal_linear_attention: N*H = " + std::to_string(pairs) + ", F = " +
                    std::to_string(inner) + ", M = " + std::to_string(out_width) +
                    " exceed the CUDA grid (N*H < 2^31, F and M < 2^21)");
  if (row_tiles > 1) LT_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float) * N * L * H * out_width, stream()));
  // Segments: enough blocks for two per SM, each segment at least 4 chunks.
  const int64_t chunks = (L + kSteps - 1) / kSteps, blocks = pairs * col_tiles * row_tiles;
  const int64_t want = (2 * multiprocessors() + blocks - 1) / blocks;
  const int S = (int)std::max<int64_t>(1, std::min<int64_t>({want, chunks / 4, 0x7fffffffLL / pairs}));
  const int64_t per = (chunks + S - 1) / S;
  const dim3 grid((unsigned)(pairs * S), (unsigned)col_tiles, (unsigned)row_tiles), block(kCols, kRowGroups);
  // One segment starts from init itself (the kernel reads it as its segment's state).
  float* seg = const_cast<float*>(st.init);
  if (S > 1) {
    const int64_t FM = inner * out_width;
    seg = scratch((size_t)(pairs * S * FM), 1);  // slot 0 holds the caller's P or G
    causal_product_kernel<true><<<grid, block, 0, stream()>>>(a, b, c, st.lengths, out, (int)out_width, L, H, reverse, S, per,
                                                 seg, nullptr, (int)inner);
    LT_CUDA_LAUNCH_CHECK();
    scan_segments(seg, st.init, pairs, S, FM);
  }
  causal_product_kernel<false><<<grid, block, 0, stream()>>>(a, b, c, st.lengths, out, (int)out_width, L, H, reverse, S, per,
                                                seg, st.final_state, (int)inner);
  LT_CUDA_LAUNCH_CHECK();
}

// out[row, m] = num'[row, m] / (num'[row, M] + eps)   (eq. 12)
__global__ void normalise_kernel(const float* P, float* out, long long rows, int M) {
  const long long total = rows * M;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long row = i / M;
    const float* p = P + row * (M + 1);
    out[i] = p[i - row * M] / (p[M] + kLinearAttentionEps);
  }
}

// In place, one warp per position: PG holds num' = [num, den - eps] and becomes
// G = [g / den, -(g . num) / den^2], the gradient of num'.
__global__ void numerator_gradient_kernel(float* PG, const float* g, long long rows, int M) {
  const int lane = threadIdx.x % 32;
  const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32;
  const long long warps = (long long)gridDim.x * blockDim.x / 32;
  for (long long row = warp; row < rows; row += warps) {
    float* p = PG + row * (M + 1);
    const float* gr = g + row * M;
    const float inv = 1.f / (p[M] + kLinearAttentionEps);
    float dot = 0.f;
    for (int m = lane; m < M; m += 32) dot += gr[m] * p[m];
    dot = warp_sum(dot);
    __syncwarp();  // every lane has read its num' before any lane overwrites it
    for (int m = lane; m < M; m += 32) p[m] = gr[m] * inv;
    if (lane == 0) p[M] = -dot * inv * inv;
    __syncwarp();
  }
}

// S' = [S, Z] [pairs, F, M+1] from S [pairs, F, M] (float or bf16) and Z [pairs, F].
__device__ float widen(float x) { return x; }
__device__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ T narrow(float x);
template <>
__device__ float narrow<float>(float x) { return x; }
template <>
__device__ __nv_bfloat16 narrow<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T>
__global__ void pack_state_kernel(const T* S, const float* Z, float* state, long long rows, int M) {
  const long long total = rows * (M + 1);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long row = i / (M + 1);
    const int m = (int)(i - row * (M + 1));
    state[i] = m < M ? widen(S[row * M + m]) : Z[row];
  }
}

// The inverse, rounding a bfloat16 S once.
template <typename T>
__global__ void unpack_state_kernel(const float* state, T* S, float* Z, long long rows, int M) {
  const long long total = rows * (M + 1);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long row = i / (M + 1);
    const int m = (int)(i - row * (M + 1));
    if (m < M)
      S[row * M + m] = narrow<T>(state[i]);
    else
      Z[row] = state[i];
  }
}

// out = eq. 12 of the product started from S' = [S, Z]; S' after the chunk goes back to S, Z.
template <typename T>
void continue_state(const float* fq, const float* fk, const float* v, const int32_t* lengths, T* S, float* Z,
                    float* out, int64_t N, int64_t L, int64_t H, int64_t F, int64_t M) {
  const int64_t rows = N * L * H, state_rows = N * H * F;
  if (rows == 0) return;  // an empty chunk leaves the state as it is
  float* P = scratch((size_t)(rows * (M + 1) + state_rows * (M + 1)));
  float* state = P + rows * (M + 1);  // read as the start, overwritten with the end
  pack_state_kernel<<<grid_for(state_rows * (M + 1), 256), 256, 0, stream()>>>(S, Z, state, state_rows, (int)M);
  LT_CUDA_LAUNCH_CHECK();
  causal_product({fq, (int)F, false}, {fk, (int)F, false}, {v, (int)M, true}, P, M + 1, N, L, H, false, false,
                 {lengths, state, state});
  normalise_kernel<<<grid_for(rows * M, 256), 256, 0, stream()>>>(P, out, rows, (int)M);
  LT_CUDA_LAUNCH_CHECK();
  unpack_state_kernel<<<grid_for(state_rows * (M + 1), 256), 256, 0, stream()>>>(state, S, Z, state_rows, (int)M);
  LT_CUDA_LAUNCH_CHECK();
}

}  // namespace

void scan_segments(float* seg, const float* init, int64_t pairs, int S, int64_t FM) {
  segment_scan_kernel<<<grid_for(pairs * FM, 256), 256, 0, stream()>>>(seg, init, pairs, S, FM);
  LT_CUDA_LAUNCH_CHECK();
}

void causal_linear_attention_forward(const float* fq, const float* fk, const float* v, const int32_t* lengths,
                                     float* out, int64_t N, int64_t L, int64_t H, int64_t F, int64_t M, bool tf32) {
  const int64_t rows = N * L * H;
  if (rows == 0) return;
  float* P = scratch(rows * (M + 1));
  causal_product({fq, (int)F, false}, {fk, (int)F, false}, {v, (int)M, true}, P, M + 1, N, L, H, false, tf32,
                 {lengths, nullptr, nullptr});
  normalise_kernel<<<grid_for(rows * M, 256), 256, 0, stream()>>>(P, out, rows, (int)M);
  LT_CUDA_LAUNCH_CHECK();
}

// Padded rows: every product reads their operands as zeros, so G there (g / eps)
// is never used and their gradients come out zero.
void causal_linear_attention_backward(const float* fq, const float* fk, const float* v, const int32_t* lengths,
                                      const float* dout, float* dfq, float* dfk, float* dv, int64_t N, int64_t L,
                                      int64_t H, int64_t F, int64_t M, bool tf32) {
  const int64_t rows = N * L * H;
  if (rows == 0) return;
  float* G = scratch(rows * (M + 1));
  const Operand q{fq, (int)F, false}, k{fk, (int)F, false}, v1{v, (int)M, true}, g{G, (int)(M + 1), false};
  const ProductState st{lengths, nullptr, nullptr};
  causal_product(q, k, v1, G, M + 1, N, L, H, false, tf32, st);
  numerator_gradient_kernel<<<grid_for(rows * 32, 256), 256, 0, stream()>>>(G, dout, rows, (int)M);
  LT_CUDA_LAUNCH_CHECK();
  causal_product(g, v1, k, dfq, F, N, L, H, false, tf32, st);
  causal_product(v1, g, q, dfk, F, N, L, H, true, tf32, st);
  causal_product(k, q, g, dv, M, N, L, H, true, tf32, st);
}

void causal_linear_attention_continue(const float* fq, const float* fk, const float* v, const int32_t* lengths,
                                      float* S, float* Z, float* out, int64_t N, int64_t L, int64_t H, int64_t F,
                                      int64_t M) {
  continue_state(fq, fk, v, lengths, S, Z, out, N, L, H, F, M);
}

void causal_linear_attention_continue_bf16(const float* fq, const float* fk, const float* v,
                                           const int32_t* lengths, uint16_t* S, float* Z, float* out, int64_t N,
                                           int64_t L, int64_t H, int64_t F, int64_t M) {
  continue_state(fq, fk, v, lengths, reinterpret_cast<__nv_bfloat16*>(S), Z, out, N, L, H, F, M);
}

}  // namespace lt::kernels
