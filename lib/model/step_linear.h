// One product of a recurrent pass, run once per step: the weights packed for
// this CPU's vector units (PackedLinear), or the plain matrix for OpenBLAS
// and cuBLAS. The transformer's generation step and the Bi-LSTM's recurrence
// both take their products from here.
#pragma once
#include "backend/device.h"
#include "ops/ops.h"
#include "ops/packed_linear.h"

namespace lt {

struct StepLinear {
  PackedLinear packed;
  Tensor W;  // defined when not packed
  Products products = Products::fp32;

  // Packing pays on an AVX-512 CPU (and bf16 products need it); elsewhere
  // OpenBLAS or cuBLAS take the plain matrix.
  static bool packing_pays(Device dev, Products p) {
    return dev == Device::cpu && (p == Products::bf16 || cpu_has_avx512());
  }
  // Takes weights [out, in] for the coming steps; packed, they reuse the
  // storage of an earlier packing of the same shape (training repacks the
  // changed weights every pass without allocating).
  void prepare(const Tensor& weights, Products p, bool pack) {
    const bool reuse =
        pack && packed.out() == weights.dim(0) && packed.in() == weights.dim(1) && packed.products() == p;
    products = p;
    W = pack ? Tensor() : weights;
    if (reuse)
      packed.repack(weights);
    else
      packed = pack ? PackedLinear(weights, p) : PackedLinear();
  }
  // scratch: see PackedLinear::forward.
  void forward(const Tensor& x, const Tensor& b, Tensor& y, bool relu = false, Tensor* scratch = nullptr) const {
    if (!W.defined())
      packed.forward(x, b, y, relu, scratch);
    else if (relu)
      linear_relu_forward(x, W, b, y, products);
    else
      linear_forward(x, W, b, y, products);
  }
};

}  // namespace lt
