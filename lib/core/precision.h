// The precision of a model's arithmetic, as a value that a model or a run
// carries and passes down to the ops (never a process-wide switch):
//
//   products  the transformer's linear layers, in training, the parallel pass
//             and the recurrent step: fp32; bf16 (CPU with AVX512_BF16:
//             operands rounded to bf16, fp32 sums, about twice the rate);
//             tf32 (CUDA: cuBLAS on the tensor cores, ~3e-4 relative error);
//   state     the recurrent state S of linear attention: f32 or bf16 (half
//             the bytes; sums stay fp32, Z stays fp32);
//   head      the output head's product. fp32 by default: it is small, and
//             rounding it cost the MNIST model ten times what every other
//             product together cost in bits/dim (docs/precision.md).
#pragma once
#include <string>

#include "backend/device.h"
#include "core/tensor.h"

namespace lt {

enum class Products { fp32, bf16, tf32 };
const char* products_name(Products p);  // "fp32" | "bf16" | "tf32"

struct Precision {
  Products products = Products::fp32;
  DType state = DType::f32;
  Products head = Products::fp32;

  // Throws lt::Error unless device d can run it: bf16 products need a CPU
  // with AVX512_BF16, tf32 products a CUDA device, a state f32 or bf16.
  void check_runs_on(Device d) const;
  std::string describe() const;  // "products bf16, state bf16, head fp32"
  bool operator==(const Precision& o) const {
    return products == o.products && state == o.state && head == o.head;
  }
};

}  // namespace lt
