// The causal product in chunks of kChunk positions on the tensor cores, the
// form of the CPU's causal_linear_attention.cpp. Per pair (n, h) and chunk c
// of rows A, B, C (positions in order) with the state S_c before it:
//   out_c = mask(A B^T) C + A S_c,   S_{c+1} = S_c + B^T C
// where the mask keeps j <= t (reverse: j >= t, chunks taken from the end).
// Three launches: every chunk's B^T C at once, a scan over the chunks for
// each S_c (S_0 = 0), then every chunk's out_c at once.
// All of a sequence's chunks run in parallel, and every product is a 16 x 16
// x 8 TF32 tile with fp32 sums, where the RNN form updates its state one
// position at a time on the CUDA cores.
//
// Operands are staged in shared memory rounded to TF32, zero past a
// sequence's length and past their logical width (rounded up to 16 columns).
// A row's stride is its width + 4 floats: wmma wants a multiple of 4 and
// 32-byte aligned tiles, and the 4 spread consecutive rows over the banks.
#include <mma.h>

#include "causal_product.cuh"
#include "cuda_check.cuh"
#include "kernels.h"

namespace lt::kernels {
namespace {

using namespace nvcuda;

constexpr int kChunk = 32;     // positions per chunk: 2 x 2 tiles of A B^T
constexpr int kMaxWidth = 64;  // the widest inner and out_width taken
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
// Output tiles of a chunk: 2 row tiles x at most 4 column tiles, at most 2 a warp.
constexpr int kTilesPerWarp = (kChunk / 16) * (kMaxWidth / 16) / kWarps;

using RowA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using ColA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
using RowB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using ColB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
using Acc = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;

__host__ __device__ constexpr int padded(int width) { return (width + 15) / 16 * 16; }
__host__ __device__ constexpr int stride(int width) { return padded(width) + 4; }

// Where chunk ci (in processing order) of a sequence of L starts; in reverse
// the last one starts before 0.
__device__ long long chunk_start(long long ci, long long L, bool reverse) {
  return reverse ? L - (ci + 1) * kChunk : ci * kChunk;
}

// Rows t0 .. t0 + kChunk - 1 of x for pair (n, h) into dst [kChunk][ld], the
// first `cols` columns, as TF32.
__device__ void stage(const Operand& x, float* dst, int ld, int cols, long long n, long long h, long long H,
                      long long L, long long t0, long long len) {
  for (int i = threadIdx.x; i < kChunk * cols; i += blockDim.x) {
    const int s = i / cols, col = i % cols;
    const long long t = t0 + s;
    dst[s * ld + col] = wmma::__float_to_tf32(t >= 0 && t < len ? x.at((n * L + t) * H + h, col) : 0.f);
  }
}

// o += rows [16 i, 16 i + 16) of x times columns [16 j, 16 j + 16) of y over
// `depth` (a multiple of 8), both row-major.
__device__ void add_product(Acc& o, const float* x, int ldx, const float* y, int ldy, int i, int j, int depth) {
  for (int k = 0; k < depth; k += 8) {
    RowA xs;
    RowB ys;
    wmma::load_matrix_sync(xs, x + i * 16 * ldx + k, ldx);
    wmma::load_matrix_sync(ys, y + k * ldy + j * 16, ldy);
    wmma::mma_sync(o, xs, ys, o);
  }
}

size_t sums_bytes(int inner, int out_width) {
  return sizeof(float) * (kChunk * stride(inner) + kChunk * stride(out_width) + padded(inner) * stride(out_width));
}
size_t outputs_bytes(int inner, int out_width) {
  return sizeof(float) * (2 * kChunk * stride(inner) + kChunk * stride(out_width) + padded(inner) * stride(out_width));
}

// grid pairs * chunks: chunk ci of pair p writes B^T C to seg [p, ci, inner, out_width].
__global__ void __launch_bounds__(kThreads) chunk_sums_kernel(Operand b, Operand c, const int32_t* lengths,
                                                              long long L, long long H, bool reverse, int chunks,
                                                              int inner, int out_width, float* seg) {
  extern __shared__ __align__(128) float smem[];
  const int IP = padded(inner), OP = padded(out_width), ldb = stride(inner), ldc = stride(out_width);
  float* sb = smem;                // [kChunk][ldb]
  float* sc = sb + kChunk * ldb;   // [kChunk][ldc]
  float* sum = sc + kChunk * ldc;  // [IP][ldc]
  const long long pair = blockIdx.x / chunks, ci = blockIdx.x % chunks;
  const long long n = pair / H, h = pair % H, len = sequence_length(lengths, n, L);
  const long long t0 = chunk_start(ci, L, reverse);
  stage(b, sb, ldb, IP, n, h, H, L, t0, len);
  stage(c, sc, ldc, OP, n, h, H, L, t0, len);
  __syncthreads();

  const int warp = threadIdx.x / 32, col_tiles = OP / 16;
  for (int tile = warp; tile < (IP / 16) * col_tiles; tile += kWarps) {
    const int i = tile / col_tiles, j = tile % col_tiles;
    Acc acc;
    wmma::fill_fragment(acc, 0.f);
    for (int k = 0; k < kChunk; k += 8) {
      ColA bt;  // B^T [f][s] is B [s][f] read by columns
      RowB cs;
      wmma::load_matrix_sync(bt, sb + k * ldb + i * 16, ldb);
      wmma::load_matrix_sync(cs, sc + k * ldc + j * 16, ldc);
      wmma::mma_sync(acc, bt, cs, acc);
    }
    wmma::store_matrix_sync(sum + i * 16 * ldc + j * 16, acc, ldc, wmma::mem_row_major);
  }
  __syncthreads();
  float* dst = seg + (long long)blockIdx.x * inner * out_width;
  for (int i = threadIdx.x; i < inner * out_width; i += blockDim.x) dst[i] = sum[(i / out_width) * ldc + i % out_width];
}

// grid pairs * chunks: chunk ci of pair p writes its rows of out from the
// state it starts from, state [p, ci, inner, out_width] (null: zero).
__global__ void __launch_bounds__(kThreads) chunk_outputs_kernel(Operand a, Operand b, Operand c,
                                                                 const int32_t* lengths, float* out, int out_width,
                                                                 long long L, long long H, bool reverse, int chunks,
                                                                 int inner, const float* state) {
  extern __shared__ __align__(128) float smem[];
  const int IP = padded(inner), OP = padded(out_width), ld = stride(inner), ldc = stride(out_width);
  constexpr int ldp = kChunk + 4;
  float* sa = smem;               // [kChunk][ld]
  float* sb = sa + kChunk * ld;   // [kChunk][ld]
  float* sc = sb + kChunk * ld;   // [kChunk][ldc], later the output rows
  float* ss = sc + kChunk * ldc;  // [IP][ldc]
  float* sp = smem;               // [kChunk][ldp] over sa and sb once A and B are read (2 * kChunk * 20 >= kChunk * ldp)
  const long long pair = blockIdx.x / chunks, ci = blockIdx.x % chunks;
  const long long n = pair / H, h = pair % H, len = sequence_length(lengths, n, L);
  const long long t0 = chunk_start(ci, L, reverse);
  stage(a, sa, ld, IP, n, h, H, L, t0, len);
  stage(b, sb, ld, IP, n, h, H, L, t0, len);
  stage(c, sc, ldc, OP, n, h, H, L, t0, len);
  const float* st = state ? state + (long long)blockIdx.x * inner * out_width : nullptr;
  for (int i = threadIdx.x; i < IP * OP; i += blockDim.x) {
    const int f = i / OP, m = i % OP;
    ss[f * ldc + m] = wmma::__float_to_tf32(st && f < inner && m < out_width ? st[f * out_width + m] : 0.f);
  }
  __syncthreads();

  // This warp's output tiles (i, j), each with its accumulator.
  const int warp = threadIdx.x / 32, col_tiles = OP / 16, tiles = (kChunk / 16) * col_tiles;
  Acc acc[kTilesPerWarp];
  auto each_tile = [&](auto&& f) {
#pragma unroll
    for (int u = 0; u < kTilesPerWarp; ++u) {
      const int tile = warp + u * kWarps;
      if (tile < tiles) f(acc[u], tile / col_tiles, tile % col_tiles);
    }
  };
  each_tile([&](Acc& o, int i, int j) {  // start as A S_c
    wmma::fill_fragment(o, 0.f);
    add_product(o, sa, ld, ss, ldc, i, j, IP);
  });
  // A B^T, one 16 x 16 tile a warp.
  Acc p;
  wmma::fill_fragment(p, 0.f);
  const int pi = warp / 2, pj = warp % 2;
  for (int k = 0; k < IP; k += 8) {
    RowA as;
    ColB bt;  // B^T [f][s] is B [s][f] read by columns
    wmma::load_matrix_sync(as, sa + pi * 16 * ld + k, ld);
    wmma::load_matrix_sync(bt, sb + pj * 16 * ld + k, ld);
    wmma::mma_sync(p, as, bt, p);
  }
  __syncthreads();  // A and B are read: their space takes the product
  wmma::store_matrix_sync(sp + pi * 16 * ldp + pj * 16, p, ldp, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < kChunk * kChunk; i += blockDim.x) {
    const int s = i / kChunk, j = i % kChunk;
    const bool keep = reverse ? j >= s : j <= s;
    sp[s * ldp + j] = keep ? wmma::__float_to_tf32(sp[s * ldp + j]) : 0.f;
  }
  __syncthreads();

  each_tile([&](Acc& o, int i, int j) { add_product(o, sp, ldp, sc, ldc, i, j, kChunk); });  // plus mask(A B^T) C
  __syncthreads();  // C is read: its space takes the output rows
  each_tile([&](Acc& o, int i, int j) { wmma::store_matrix_sync(sc + i * 16 * ldc + j * 16, o, ldc, wmma::mem_row_major); });
  __syncthreads();
  for (int i = threadIdx.x; i < kChunk * out_width; i += blockDim.x) {
    const int s = i / out_width, m = i % out_width;
    const long long t = t0 + s;
    if (t >= 0 && t < L) out[((n * L + t) * H + h) * out_width + m] = sc[s * ldc + m];
  }
}

}  // namespace

bool causal_product_chunked(Operand a, Operand b, Operand c, float* out, int64_t out_width, int64_t N, int64_t L,
                            int64_t H, bool reverse, const int32_t* lengths) {
  const int64_t inner = a.logical_width(), pairs = N * H, chunks = (L + kChunk - 1) / kChunk;
  if (inner > kMaxWidth || out_width > kMaxWidth || pairs * chunks > 0x7fffffffLL) return false;
  const unsigned blocks = static_cast<unsigned>(pairs * chunks);
  float* states = nullptr;  // one chunk starts from zero
  if (chunks > 1) {
    const int64_t FM = inner * out_width;
    states = scratch(static_cast<size_t>(pairs * chunks * FM), 1);  // slot 0 holds the caller's P or G
    chunk_sums_kernel<<<blocks, kThreads, sums_bytes((int)inner, (int)out_width), stream()>>>(
        b, c, lengths, L, H, reverse, (int)chunks, (int)inner, (int)out_width, states);
    LT_CUDA_LAUNCH_CHECK();
    scan_segments(states, nullptr, pairs, (int)chunks, FM);
  }
  chunk_outputs_kernel<<<blocks, kThreads, outputs_bytes((int)inner, (int)out_width), stream()>>>(
      a, b, c, lengths, out, (int)out_width, L, H, reverse, (int)chunks, (int)inner, states);
  LT_CUDA_LAUNCH_CHECK();
  return true;
}

}  // namespace lt::kernels
