// exp, sigmoid, tanh and erfc as straight-line float code that the compiler vectorises inside
// `omp simd` loops; libm's expf and erff are scalar calls (erff ~11 ns each
// here), which would dominate softmax attention rows and the activations.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace lt::simd_math {

// exp(x) for x <= 88 (larger x give exp(88)), within 2 ulp: x = n ln2 + r
// with |r| <= ln2/2, e^r by the degree-6 minimax polynomial of Cephes' expf,
// 2^n written into the exponent bits. Below -87.3 (where 2^n would be
// denormal) the result is 0; a NaN stays NaN.
inline float exp(float x) {
  // The clamp sends a NaN to -87.3, so that the integer conversion below
  // stays defined; the NaN itself is returned at the end. Comparisons, not
  // std::fmin/fmax: GCC does not vectorise those calls without -ffast-math,
  // which would leave every loop that calls exp scalar.
  const float low = x > -87.3f ? x : -87.3f;
  const float xc = low < 88.f ? low : 88.f;
  const float shifter = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (xc * 1.44269504f + shifter) - shifter;
  float r = xc - n * 0.693359375f;  // ln2 split in two; n * 0.693359375 is exact
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return x < -87.3f ? 0.f : (x == x ? p * scale : x);
}

// 1 / (1 + e^-x): below 1e-38 under -88, 1 above 87.3, NaN stays NaN.
inline float sigmoid(float x) { return 1.f / (1.f + exp(-x)); }

// tanh(x) within a few ulp: Cephes' tanhf, an odd polynomial below 0.625,
// where 1 - 2 / (e^2|x| + 1) would lose the low bits of a small result, and
// that formula above. NaN stays NaN.
inline float tanh(float x) {
  const float ax = x < 0.f ? -x : x, z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float large = 1.f - 2.f / (exp(2.f * ax) + 1.f);
  return ax < 0.625f ? small : (x < 0.f ? -large : large);
}

// The elementwise feature maps phi (eq. 7), here so that the activation ops
// and the recurrent step that applies phi itself compute the same floats.
inline float elu_plus_one(float v) { return v > 0.f ? v + 1.f : exp(v); }
inline float relu(float v) { return v > 0.f ? v : 0.f; }

// erfc(x) with relative error below 1.2e-7 for every x (Numerical Recipes'
// Chebyshev fit erfcc), so that Phi(x) = erfc(-x / sqrt 2) / 2 is accurate in
// both tails, which 1 + erf(x) is not.
inline float erfc(float x) {
  const float z = x < 0.f ? -x : x;
  const float t = 1.f / (1.f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float e = t * exp(p - z * z);
  return x < 0.f ? 2.f - e : e;
}

// The CPU's lanes of common/softmax_row.h: one, whose loops `omp simd`
// vectorises.
struct OneLane {
  static constexpr int kStride = 1;
  static int first() { return 0; }
  static float exp(float x) { return simd_math::exp(x); }
  static float max(float a, float b) { return b > a ? b : a; }
  static float reduce_max(float v) { return v; }
  static float reduce_sum(float v) { return v; }
};

}  // namespace lt::simd_math
