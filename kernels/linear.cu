// Linear layer on the GPU. cuBLAS is column-major; a row-major [r, c] matrix
// is its [c, r] transpose, so y^T = W x^T becomes gemm(op(W)=T, x) with
// swapped roles. The forward runs through cuBLASLt so that the bias (and
// ReLU) are applied in the product's epilogue: a separate broadcast before an
// accumulating sgemm wrote and reread the whole output, 12% of a generation
// step on the H100. Shapes it has no algorithm for take that older path.
#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <deque>

#include "cuda_check.cuh"
#include "kernels.h"

namespace lt::kernels {
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

// One product shape with its epilogue, described and searched once: the
// step runs the same few shapes hundreds of times per image.
struct LtPlan {
  int64_t rows, in, out;
  cublasLtEpilogue_t epilogue;
  bool tf32;
  bool found = false;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t w = nullptr, x = nullptr, y = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

constexpr size_t kLtWorkspace = 32u << 20;  // what cuBLASLt suggests for Hopper

const LtPlan& lt_plan(int64_t rows, int64_t in, int64_t out, cublasLtEpilogue_t epilogue, bool tf32) {
  static std::deque<LtPlan> plans;  // references stay valid as it grows
  for (const LtPlan& p : plans)
    if (p.rows == rows && p.in == in && p.out == out && p.epilogue == epilogue && p.tf32 == tf32) return p;
  LtPlan p{rows, in, out, epilogue, tf32};
  LT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                           CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  LT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  // Stored (column-major) shapes: W is in x out, x is in x rows, y is out x rows.
  LT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.w, CUDA_R_32F, in, out, in));
  LT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.x, CUDA_R_32F, in, rows, in));
  LT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.y, CUDA_R_32F, out, rows, out));
  cublasLtMatmulPreference_t pref = nullptr;
  LT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = kLtWorkspace;
  const uint32_t align = 16;  // linear_forward takes this path only for 16-byte aligned operands
  LT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    LT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align));
  cublasLtMatmulHeuristicResult_t result{};
  int n = 0;
  // No algorithm is not an error: linear_forward falls back to sgemm.
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(cublas_lt(), p.op, p.w, p.x, p.y, p.y, pref, 1, &result, &n);
  LT_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (st == CUBLAS_STATUS_SUCCESS && n > 0) {
    p.found = true;
    p.algo = result.algo;
  }
  plans.push_back(p);
  return plans.back();
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The older path: bias broadcast into y, then an accumulating sgemm, then ReLU.
// The handle's math mode for one call, back to full fp32 after it: other
// users of the handle (attention's products) stay fp32.
struct MathMode {
  explicit MathMode(bool tf32) : tf32_(tf32) {
    if (tf32_) LT_CUBLAS_CHECK(cublasSetMathMode(cublas(), CUBLAS_TF32_TENSOR_OP_MATH));
  }
  ~MathMode() {
    // A destructor may not throw; failing to reset a valid handle's mode is
    // not an error cuBLAS reports for any reason a later call would not.
    if (tf32_) (void)cublasSetMathMode(cublas(), CUBLAS_DEFAULT_MATH);
  }
  bool tf32_;
};

void linear_forward_sgemm(const float* x, const float* W, const float* b, float* y, int64_t rows, int64_t in,
                          int64_t out, bool relu, bool tf32) {
  MathMode mode(tf32);
  float beta = 0.f;
  if (b) {
    broadcast_rows_kernel<<<blocks_for(rows * out, 256), 256, 0, stream()>>>(b, y, rows, (int)out);
    LT_CUDA_LAUNCH_CHECK();
    beta = 1.f;
  }
  const float alpha = 1.f;
  // column-major: C(out x rows) = op(W)(out x in) * x^T(in x rows)
  LT_CUBLAS_CHECK(cublasSgemm(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, (int)out, (int)rows, (int)in, &alpha, W,
                              (int)in, x, (int)in, &beta, y, (int)out));
  if (relu) relu_forward(y, y, rows * out);
}

}  // namespace

void linear_forward(const float* x, const float* W, const float* b, float* y, int64_t rows, int64_t in,
                    int64_t out, bool relu, bool tf32) {
  if (rows == 0 || out == 0) return;
  const bool lt_ok = in > 0 && aligned16(x) && aligned16(W) && aligned16(y) && (!b || aligned16(b));
  if (lt_ok) {
    const cublasLtEpilogue_t epilogue = b ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                          : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
    const LtPlan& p = lt_plan(rows, in, out, epilogue, tf32);
    if (p.found) {
      if (b) LT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b));
      static void* workspace = malloc(kLtWorkspace);
      const float alpha = 1.f, beta = 0.f;
      LT_CUBLAS_CHECK(cublasLtMatmul(cublas_lt(), p.op, &alpha, W, p.w, x, p.x, &beta, y, p.y, y, p.y, &p.algo,
                                     workspace, kLtWorkspace, stream()));
      return;
    }
  }
  linear_forward_sgemm(x, W, b, y, rows, in, out, relu, tf32);
}

void linear_backward(const float* x, const float* W, const float* dy, float* dx, float* dW,
                     float* db, int64_t rows, int64_t in, int64_t out, bool tf32) {
  MathMode mode(tf32);
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
    bias_partial_kernel<<<dim3(blocks_for(out, 32), chunks), dim3(32, 8), 0, stream()>>>(dy, partial, rows, (int)out, chunk);
    LT_CUDA_LAUNCH_CHECK();
    bias_sum_kernel<<<blocks_for(out, 128), 128, 0, stream()>>>(partial, db, chunks, (int)out);
    LT_CUDA_LAUNCH_CHECK();
  }
}

}  // namespace lt::kernels
