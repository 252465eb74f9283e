// A Linear layer's weights packed once for bf16 products on the CPU: the
// opt-in fast path of generation (lt-sample-image --bf16). Inputs and weights
// are rounded to bf16 (8 significant bits), products accumulate in fp32.
#pragma once
#include <cstdint>
#include <vector>

#include "lt/tensor.h"

namespace lt {

// True when this CPU has AVX512_BF16 (vdpbf16ps), which LinearBf16 needs.
bool cpu_has_bf16();

class LinearBf16 {
 public:
  LinearBf16() = default;
  // Packs W [out, in] (PyTorch layout, CPU); later changes to W are not seen.
  // Throws lt::Error when the CPU lacks AVX512_BF16.
  explicit LinearBf16(const Tensor& W);
  // y = x W^T + b (then max(0, .) when relu); x [..., in], y [..., out], b
  // [out] or undefined. Not reentrant: the rounded input lives in a buffer
  // of this object, reused across calls.
  void forward(const Tensor& x, const Tensor& b, Tensor& y, bool relu = false) const;
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }

 private:
  int64_t in_ = 0, out_ = 0;
  std::vector<uint16_t> packed_;
  mutable std::vector<uint32_t> xb_;
};

}  // namespace lt
