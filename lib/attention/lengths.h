// The lengths of a padded batch (int32 [N], see attention/attention.h): checked once
// here for every attention form. On the CPU the values are validated; on the
// GPU they stay on the device, where the kernels read (and clamp) them, so a
// call costs no device-to-host copy.
#pragma once
#include <string>

#include "core/tensor.h"

namespace lt {

// lengths.data_i32() (host or device pointer), or nullptr when lengths is
// undefined (every one of the `limit` positions is real).
inline const int32_t* lengths_data(const Tensor& lengths, int64_t N, int64_t limit, const std::string& what) {
  if (!lengths.defined()) return nullptr;
  check(lengths.dtype() == DType::i32 && lengths.ndim() == 1 && lengths.dim(0) == N,
        what + " must be int32 [N] = [" + std::to_string(N) + "], got " + dtype_name(lengths.dtype()) + " " +
            shape_str(lengths.shape()));
  const int32_t* p = lengths.data_i32();
  if (lengths.device() == Device::cpu)
    for (int64_t n = 0; n < N; ++n)
      check(0 <= p[n] && p[n] <= limit, what + "[" + std::to_string(n) + "] = " + std::to_string(p[n]) +
                                            " is outside [0, " + std::to_string(limit) + "]");
  return p;
}

// The length of sequence n on the host side (CPU tensors only).
inline int64_t length_of(const int32_t* lengths, int64_t n, int64_t all) { return lengths ? lengths[n] : all; }

}  // namespace lt
