// Linear layer y = x W^T + b with W stored [out, in] like torch.nn.Linear, so
// both passes are single sgemm calls over all rows at once (bf16_gemm ones
// for bf16 products).
#include <vector>

#include "backend/cpu_bf16_gemm.h"
#include "backend/cpu_blas.h"
#include "backend/dispatch.h"

#include "ops/ops.h"

namespace lt {
namespace {
struct LinearDims {
  int64_t rows, in, out;
};

LinearDims linear_dims(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& y,
                       const char* what) {
  check(W.ndim() == 2, std::string(what) + ": weight must be [out, in], got " + shape_str(W.shape()));
  LinearDims d{0, W.dim(1), W.dim(0)};
  check(x.dim(-1) == d.in, std::string(what) + ": input " + shape_str(x.shape()) +
                               " does not end in the weight's in-features " + std::to_string(d.in));
  d.rows = x.numel() / d.in;
  check(y.dim(-1) == d.out && y.numel() == d.rows * d.out,
        std::string(what) + ": output " + shape_str(y.shape()) + " does not match input " +
            shape_str(x.shape()) + " and weight " + shape_str(W.shape()));
  if (b.defined()) check_shape(b, {d.out}, what);
  return d;
}
}  // namespace

namespace {
void check_products(Products products, Device dev, const char* what) {
  if (products == Products::fp32) return;
  check(products != Products::tf32 || dev == Device::cuda, std::string(what) + ": tf32 products need CUDA");
  check(products != Products::bf16 || (dev == Device::cpu && cpu_has_bf16()),
        std::string(what) + ": bf16 products need a CPU with AVX512_BF16");
}

void forward(const Tensor& x, const Tensor& W, const Tensor& b, Tensor& y, bool relu, Products products,
             const char* what) {
  LinearDims d = linear_dims(x, W, b, y, what);
  Device dev = common_device({&x, &W, &b, &y}, what);
  check_products(products, dev, what);
  const float* bp = b.defined() ? b.data() : nullptr;
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::linear_forward(x.data(), W.data(), bp, y.data(), d.rows, d.in, d.out, relu,
                                    products == Products::tf32));

  float* yp = y.data();
  if (bp) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < d.rows; ++r)
      for (int64_t o = 0; o < d.out; ++o) yp[r * d.out + o] = bp[o];
  }
  if (products == Products::bf16)
    cpu::bf16_gemm(false, true, d.rows, d.out, d.in, x.data(), d.in, W.data(), d.in, bp != nullptr, yp, d.out);
  else
    cpu::sgemm(false, true, d.rows, d.out, d.in, 1.f, x.data(), d.in, W.data(), d.in, bp ? 1.f : 0.f, yp,
               d.out);
  if (relu) relu_forward(y, y);
}
}  // namespace

void linear_forward(const Tensor& x, const Tensor& W, const Tensor& b, Tensor& y, Products products) {
  forward(x, W, b, y, false, products, "linear_forward");
}

void linear_relu_forward(const Tensor& x, const Tensor& W, const Tensor& b, Tensor& y, Products products) {
  forward(x, W, b, y, true, products, "linear_relu_forward");
}

void linear_backward(const Tensor& x, const Tensor& W, const Tensor& dy, Tensor& dx, Tensor& dW,
                     Tensor& db, Products products) {
  LinearDims d = linear_dims(x, W, db, dy, "linear_backward");
  check_shape(dW, W.shape(), "linear_backward dW");
  if (dx.defined()) check_shape(dx, x.shape(), "linear_backward dx");
  Device dev = common_device({&x, &W, &dy, &dx, &dW, &db}, "linear_backward");
  check_products(products, dev, "linear_backward");
  float* dxp = dx.defined() ? dx.data() : nullptr;
  float* dbp = db.defined() ? db.data() : nullptr;
  if (dev == Device::cuda)
    LT_ON_CUDA(cuda::linear_backward(x.data(), W.data(), dy.data(), dxp, dW.data(), dbp, d.rows, d.in, d.out,
                                     products == Products::tf32));

  const float* dyp = dy.data();
  if (products == Products::bf16) {
    if (dxp) cpu::bf16_gemm(false, false, d.rows, d.in, d.out, dyp, d.out, W.data(), d.in, false, dxp, d.in);
    cpu::bf16_gemm(true, false, d.out, d.in, d.rows, dyp, d.out, x.data(), d.in, true, dW.data(), d.in);
  } else {
    if (dxp) cpu::sgemm(false, false, d.rows, d.in, d.out, 1.f, dyp, d.out, W.data(), d.in, 0.f, dxp, d.in);
    cpu::sgemm(true, false, d.out, d.in, d.rows, 1.f, dyp, d.out, x.data(), d.in, 1.f, dW.data(), d.in);
  }
  if (dbp) {
    // db += dy^T 1 as a BLAS gemv: a column-sum loop strides through dy
    // once per output and ran at a tenth of this speed.
    static thread_local std::vector<float> ones;
    if (int64_t(ones.size()) < d.rows) ones.assign(d.rows, 1.f);
    cblas_sgemv(CblasRowMajor, CblasTrans, int(d.rows), int(d.out), 1.f, dyp, int(d.out), ones.data(), 1, 1.f, dbp, 1);
  }
}

}  // namespace lt
