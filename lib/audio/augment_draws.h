// The random draws of the augmentations: pure functions of (key, index).
#pragma once
#include <cmath>
#include <cstdint>

#include "common/random.h"

namespace lt::audio {

// A standard normal draw (Box-Muller over two counter-based uniforms).
inline double gaussian(uint64_t key, int64_t i) {
  const double u = sample_uniform(key, i, 0, 0), v = sample_uniform(key, i, 0, 1);
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

}  // namespace lt::audio
