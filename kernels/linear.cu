// Linear layer on the GPU: cuBLAS sgemm for the products, small kernels for
// the bias. cuBLAS is column-major; a row-major [r, c] matrix is its [c, r]
// transpose, so y^T = W x^T becomes gemm(op(W)=T, x) with swapped roles.
#include "cuda_check.cuh"
#include "kernels.h"

namespace lt::cuda {
namespace {

__global__ void broadcast_rows_kernel(const float* b, float* y, long long rows, int out) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < rows * out) y[i] = b[i % out];
}

// db[o] += sum_r dy[r, o]: one block per 32 columns, threads stride over rows.
__global__ void bias_grad_kernel(const float* dy, float* db, long long rows, int out) {
  __shared__ float partial[8][33];
  int col = blockIdx.x * 32 + threadIdx.x;
  float s = 0.f;
  if (col < out)
    for (long long r = threadIdx.y; r < rows; r += blockDim.y) s += dy[r * out + col];
  partial[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < out) {
    for (int j = 1; j < (int)blockDim.y; ++j) s += partial[j][threadIdx.x];
    db[col] += s;
  }
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
    dim3 block(32, 8);
    bias_grad_kernel<<<blocks_for(out, 32), block>>>(dy, db, rows, (int)out);
    LT_CUDA_LAUNCH_CHECK();
  }
}

}  // namespace lt::cuda
