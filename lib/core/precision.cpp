// Precision: names, and whether a device can run it.
#include "core/precision.h"

#include "common/error.h"

namespace lt {

const char* products_name(Products p) {
  switch (p) {
    case Products::bf16: return "bf16";
    case Products::tf32: return "tf32";
    default: return "fp32";
  }
}

void Precision::check_runs_on(Device d) const {
  for (Products p : {products, head}) {
    check(p != Products::tf32 || d == Device::cuda, "tf32 products need CUDA (on the CPU: fp32 or bf16)");
    check(p != Products::bf16 || d == Device::cpu,
          "bf16 products are a CPU precision (on CUDA: fp32 or tf32, and a bf16 state)");
    check(p != Products::bf16 || cpu_has_bf16(), "bf16 products need a CPU with AVX512_BF16 (this one lacks it)");
  }
  check(state == DType::f32 || state == DType::bf16, "a recurrent state is float32 or bfloat16");
}

std::string Precision::describe() const {
  return std::string("products ") + products_name(products) + ", state " +
         (state == DType::bf16 ? "bf16" : "fp32") + ", head " + products_name(head);
}

}  // namespace lt
