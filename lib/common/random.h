// The random numbers of sampling, dropout, data order and initialisation.
#pragma once
#include <cstdint>

#include "common/host_device.h"

namespace lt {

// Counter-based: draw d of row b at decoding step t under a seed is a pure
// function of (seed, t, b, d), so a run is reproducible from its seed, the rows
// of a batch are independent, and the CUDA kernels (which include this header)
// draw exactly what the CPU draws.

// splitmix64's output function (Steele et al. 2014): a bijective 64-bit mixer.
LT_HOST_DEVICE inline uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in the open interval (0, 1) on a grid of 2^-52, so that both log(u)
// and log(1 - u) are finite and exact to compute.
LT_HOST_DEVICE inline double sample_uniform(uint64_t seed, int64_t step, int64_t row, int draw) {
  uint64_t key = splitmix64(splitmix64(splitmix64(seed) + uint64_t(step)) + uint64_t(row));
  uint64_t bits = splitmix64(key + uint64_t(draw)) >> 12;
  return (double(bits) + 0.5) * 0x1p-52;
}

}  // namespace lt
