// A Linear layer's weights packed once for the CPU's vector units: the matrix
// products of generation's recurrent step. At batch 64 OpenBLAS spends a
// fifth of the step repacking the weights at every call; packed here once,
// the same fp32 products run about 1.7x faster, and bf16 ones (AVX512_BF16:
// inputs and weights rounded to 8 significant bits, fp32 sums) about 3x.
// Where the CPU has AMX (cpu_has_amx) and the inputs are a multiple of 32,
// bf16 products run on its tiles instead: the fp32 kernel's peak is 64 flops
// a cycle, TDPBF16PS's 1,024.
#pragma once
#include <cstdint>

#include "core/precision.h"
#include "core/tensor.h"

namespace lt {

class PackedLinear {
 public:
  PackedLinear() = default;
  // Packs W [out, in] (PyTorch layout, CPU) for fp32 or bf16 products;
  // later changes to W are not seen. Throws lt::Error when the CPU lacks
  // what the precision needs (AVX-512; AVX512_BF16 for bf16).
  PackedLinear(const Tensor& W, Products products);
  // Packs new values of W, shaped as before, into the same storage: for
  // weights that change between passes (training), without allocating.
  void repack(const Tensor& W);
  // y = x W^T + b (then max(0, .) when relu); x [..., in], y [..., out], b
  // [out] or undefined. Every output is computed by one thread in a fixed
  // order: the result does not depend on the number of threads. Threads may
  // call it at once (bf16 rounds the input into a buffer of the thread's,
  // or into *scratch when given: the caller's, sized ahead by
  // scratch_numel, so that a thread's first large batch allocates nothing).
  void forward(const Tensor& x, const Tensor& b, Tensor& y, bool relu = false, Tensor* scratch = nullptr) const;
  // int32 elements of forward's scratch for `rows` rows (0 for fp32).
  int64_t scratch_numel(int64_t rows) const;
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  Products products() const { return products_; }

 private:
  int64_t in_ = 0, out_ = 0;
  Products products_ = Products::fp32;
  void pack(const float* w);
  // Tensors, so that memory accounting (lt-bench's peak) sees them: fp32
  // panels, or bf16 pairs stored as one i32 each.
  Tensor packed_;
};

}  // namespace lt
