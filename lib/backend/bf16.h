// bfloat16 <-> float32 on the CPU: the top 16 bits of a float, rounded to
// nearest even as vcvtneps2bf16 does. Plain integer code, so that loops over
// arrays vectorise.
#pragma once
#include <cstdint>
#include <cstring>

namespace lt {

inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays a NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float bf16_to_float(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace lt
