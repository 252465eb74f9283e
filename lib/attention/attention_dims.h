// Shape checks shared by the attention forms: queries [N, L, H, E], keys
// [N, S, H, E], values [N, S, H, M]; errors name the shapes at fault.
#pragma once
#include <string>

#include "core/tensor.h"

namespace lt {

struct AttentionDims {
  int64_t N, L, S, H, E, M;
};

inline AttentionDims attention_dims(const Tensor& q, const Tensor& k, const Tensor& v, const std::string& what) {
  check(q.ndim() == 4, what + ": queries must be [N, L, H, E], got " + shape_str(q.shape()));
  AttentionDims d{q.dim(0), q.dim(1), 0, q.dim(2), q.dim(3), 0};
  check(k.ndim() == 4 && k.dim(0) == d.N && k.dim(2) == d.H && k.dim(3) == d.E,
        what + ": keys " + shape_str(k.shape()) + " do not match queries " + shape_str(q.shape()) +
            " (expected [N, S, H, E] = [" + std::to_string(d.N) + ", S, " + std::to_string(d.H) + ", " +
            std::to_string(d.E) + "])");
  d.S = k.dim(1);
  check(v.ndim() == 4 && v.dim(0) == d.N && v.dim(1) == d.S && v.dim(2) == d.H,
        what + ": values " + shape_str(v.shape()) + " do not match keys " + shape_str(k.shape()) +
            " (expected [N, S, H, M] = [" + std::to_string(d.N) + ", " + std::to_string(d.S) + ", " +
            std::to_string(d.H) + ", M])");
  d.M = v.dim(3);
  return d;
}

// The shape of the attention output (and of its gradient): [N, L, H, M].
inline Shape attention_out_shape(const AttentionDims& d) { return {d.N, d.L, d.H, d.M}; }

}  // namespace lt
