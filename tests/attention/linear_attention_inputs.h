// Inputs and helpers the linear-attention tests share (CPU and CUDA).
#pragma once
#include <cmath>
#include <vector>

#include "attention/attention.h"
#include "test_util.h"

namespace lt::test {

// phi(x) = elu(x) + 1 of a standard normal: positive features, sane denominators.
inline Tensor positive_features(Rng& rng, const Shape& shape) {
  std::vector<float> x = rng.normals(shape_numel(shape));
  for (auto& e : x) e = e > 0 ? e + 1.f : std::exp(e);
  return Tensor::from_vector(x, shape);
}

// The state after a whole prefix: causal_linear_attention_continue from zeros
// (what prefill runs), the queries standing in for nothing but its outputs.
inline void prefix_state(const Tensor& fk, const Tensor& v, Tensor& S, Tensor& Z) {
  S.zero();
  Z.zero();
  Tensor out = Tensor::empty({v.dim(0), v.dim(1), v.dim(2), v.dim(3)}, v.device());
  causal_linear_attention_continue(fk, fk, v, Tensor(), S, Z, out);
}

}  // namespace lt::test
