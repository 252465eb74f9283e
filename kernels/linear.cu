// Linear layer on the GPU: cuBLAS sgemm for the products, small kernels for
// the bias. cuBLAS is column-major; a row-major [r, c] matrix is its [c, r]
// transpose, so y^T = W x^T becomes gemm(op(W)=T, x) with swapped roles.
#include <algorithm>

#include "cuda_check.cuh"
#include "kernels.h"

namespace lt::cuda {
namespace {

__global__ void broadcast_rows_kernel(const float* b, float* y, long long rows, int out) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < rows * out) y[i] = b[i % out];
}

// db[o] += sum_r dy[r, o] in two deterministic passes: blocks of 32 columns x
// a chunk of rows write partial sums, then one thread per column adds the
// chunks in order. (One block per column tile left the GPU nearly idle: a
// training step spent most of its time here.)
constexpr int kBiasChunkRows = 256, kBiasMaxChunks = 1024;

__global__ void bias_partial_kernel(const float* dy, float* partial, long long rows, int out, long long chunk) {
  __shared__ float part[8][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  const long long r0 = blockIdx.y * chunk, r1 = min(rows, r0 + chunk);
  float s = 0.f;
  if (col < out)
    for (long long r = r0 + threadIdx.y; r < r1; r += blockDim.y) s += dy[r * out + col];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < out) {
    for (int j = 1; j < (int)blockDim.y; ++j) s += part[j][threadIdx.x];
    partial[(long long)blockIdx.y * out + col] = s;
  }
}

__global__ void bias_sum_kernel(const float* partial, float* db, int chunks, int out) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= out) return;
  float s = 0.f;
  for (int c = 0; c < chunks; ++c) s += partial[(long long)c * out + col];
  db[col] += s;
}

}  // namespace

void linear_forward(const float* x, const float* W, const float* b, float* y, int64_t rows,
                    int64_t in, int64_t out) {
  float beta = 0.f;
  if (b) {
    broadcast_rows_kernel<<<blocks_for(rows * out, 256), 256>>>(b, y, rows, (int)out);
    LT_CUDA_LAUNCH_CHECK();
    beta = 1.f;
  }
  const float alpha = 1.f;
  // column-major: y^T[out, rows] = W^T^T... i.e. C(out x rows) = op(W)(out x in) * x^T(in x rows)
  LT_CUBLAS_CHECK(cublasSgemm(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, (int)out, (int)rows, (int)in, &alpha, W,
                              (int)in, x, (int)in, &beta, y, (int)out));
}

void linear_backward(const float* x, const float* W, const float* dy, float* dx, float* dW,
                     float* db, int64_t rows, int64_t in, int64_t out) {
  const float one = 1.f, zero = 0.f;
  if (dx)  // dx[rows, in] = dy[rows, out] W[out, in]  ->  dx^T(in x rows) = W^T(in x out) dy^T(out x rows)
    LT_CUBLAS_CHECK(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, (int)in, (int)rows, (int)out, &one, W,
                                (int)in, dy, (int)out, &zero, dx, (int)in));
  // dW[out, in] += dy^T x  ->  dW^T(in x out) += x^T(in x rows) dy(rows x out)
  LT_CUBLAS_CHECK(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_T, (int)in, (int)out, (int)rows, &one, x,
                              (int)in, dy, (int)out, &one, dW, (int)in));
  if (db) {
    long long chunk = kBiasChunkRows;
    while ((rows + chunk - 1) / chunk > kBiasMaxChunks) chunk *= 2;
    const int chunks = (int)std::max(1LL, (rows + chunk - 1) / chunk);
    float* partial = scratch((size_t)chunks * out);
    bias_partial_kernel<<<dim3(blocks_for(out, 32), chunks), dim3(32, 8)>>>(dy, partial, rows, (int)out, chunk);
    LT_CUDA_LAUNCH_CHECK();
    bias_sum_kernel<<<blocks_for(out, 128), 128>>>(partial, db, chunks, (int)out);
    LT_CUDA_LAUNCH_CHECK();
  }
}

}  // namespace lt::cuda
