// What the tools' --bf16 and --tf32 flags mean, in one place
// (docs/precision.md has the table with what each costs).
#pragma once
#include "backend/device.h"
#include "common/error.h"
#include "core/precision.h"

namespace lt {

// Generation (lt-sample-image, lt-complete, lt-bench generate, lt-train
// --eval --recurrent): --bf16 is the recurrent state in bf16 and, on the CPU,
// the step's products too; --tf32 the products on CUDA's tensor cores. The
// output head stays fp32.
inline Precision generation_precision(bool bf16, bool tf32, Device d) {
  check(!tf32 || d == Device::cuda, "--tf32 is a CUDA option (the CPU has --bf16)");
  Precision p;
  if (bf16) p.state = DType::bf16;
  if (bf16 && d == Device::cpu) p.products = Products::bf16;
  if (tf32) p.products = Products::tf32;
  p.check_runs_on(d);
  return p;
}

// Training and the parallel pass (lt-train, lt-bench train, lt-asr): --bf16
// is the transformer's products in bf16 on the CPU, --tf32 on CUDA's tensor
// cores. The output head stays fp32.
inline Precision training_precision(bool bf16, bool tf32, Device d) {
  check(!tf32 || d == Device::cuda, "--tf32 is a CUDA option (the CPU has --bf16)");
  check(!bf16 || d == Device::cpu, "--bf16 products in training and recognition are a CPU option (CUDA has --tf32)");
  Precision p;
  if (bf16) p.products = Products::bf16;
  if (tf32) p.products = Products::tf32;
  p.check_runs_on(d);
  return p;
}

}  // namespace lt
