// Buffers that only grow: a view of the shape asked for at the start of its
// storage, reallocated only when the storage is too small. A model's
// buffers are then sized by the largest batch so far, and smaller ones
// allocate nothing.
#pragma once
#include "core/tensor.h"

namespace lt {

inline Tensor grown_view(Tensor& storage, const Shape& s, Device d, DType t = DType::f32) {
  const int64_t n = shape_numel(s);
  if (!storage.defined() || storage.numel() < n || storage.device() != d) storage = Tensor::empty({n}, d, t);
  return storage.rows(0, n).reshape(s);
}

}  // namespace lt
