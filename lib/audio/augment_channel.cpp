// Channels: the telephone band, G.711's companding, and a level set too high.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "audio/audio_file.h"
#include "audio/augment.h"
#include "audio/resampler.h"

namespace lt::audio {

std::vector<float> telephone_band(const std::vector<float>& x) {
  std::vector<float> y = resample(resample(x, kSpeechSampleRate, 8000), 8000, kSpeechSampleRate);
  y.resize(x.size(), 0.f);
  // Second-order Butterworth high-pass at 300 Hz (RBJ's biquad, Q = 1/sqrt 2).
  const double w = 2 * M_PI * 300 / kSpeechSampleRate, alpha = std::sin(w) / std::sqrt(2.0), c = std::cos(w);
  const double a0 = 1 + alpha, b0 = (1 + c) / 2 / a0, b1 = -(1 + c) / a0, b2 = b0, a1 = -2 * c / a0,
               a2 = (1 - alpha) / a0;
  double x1 = 0, x2 = 0, y1 = 0, y2 = 0;
  for (float& v : y) {
    const double in = v, out = b0 * in + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
    x2 = x1, x1 = in, y2 = y1, y1 = out;
    v = float(out);
  }
  return y;
}

// G.711 (ITU-T, 1972) as its reference C code states it, on 16-bit samples:
// mu-law codes their top 14 bits, A-law their top 13; a code is sign, 3-bit
// segment and 4-bit step, stored inverted (mu-law) or with alternate bits
// flipped (A-law), and decodes to the middle of its step.
namespace {
int to16(float v) { return int(std::clamp(std::lround(double(v) * 32768), -32768L, 32767L)); }

uint8_t mu_encode(int pcm16) {
  constexpr int kBias = 0x84, kClip = 8159;
  int m = pcm16 >> 2;  // 14 bits
  const int mask = m < 0 ? 0x7F : 0xFF;
  m = std::min(std::abs(m), kClip) + (kBias >> 2);
  int segment = 0;
  while (segment < 8 && m >= (64 << segment)) ++segment;
  if (segment == 8) return uint8_t(0x7F ^ mask);
  return uint8_t(((segment << 4) | ((m >> (segment + 1)) & 0xF)) ^ mask);
}
int mu_decode(uint8_t code) {
  const int u = ~code & 0xFF;
  const int t = (((u & 0xF) << 3) + 0x84) << ((u >> 4) & 7);
  return (u & 0x80) ? 0x84 - t : t - 0x84;
}

uint8_t a_encode(int pcm16) {
  int m = pcm16 >> 3;  // 13 bits
  const int mask = m >= 0 ? 0xD5 : 0x55;
  if (m < 0) m = -m - 1;
  int segment = 0;
  while (segment < 8 && m >= (32 << segment)) ++segment;
  if (segment == 8) return uint8_t(0x7F ^ mask);
  const int step = (m >> (segment < 2 ? 1 : segment)) & 0xF;
  return uint8_t(((segment << 4) | step) ^ mask);
}
int a_decode(uint8_t code) {
  const int a = code ^ 0x55, segment = (a >> 4) & 7;
  int t = (a & 0xF) << 4;
  t += segment == 0 ? 8 : 0x108;
  if (segment > 1) t <<= segment - 1;
  return (a & 0x80) ? t : -t;
}
}  // namespace

void mu_law(std::vector<float>& x) {
  for (float& v : x) v = float(mu_decode(mu_encode(to16(v))) / 32768.0);
}

void a_law(std::vector<float>& x) {
  for (float& v : x) v = float(a_decode(a_encode(to16(v))) / 32768.0);
}

void gain_and_clip(std::vector<float>& x, double gain_db, double level) {
  const double g = std::pow(10.0, gain_db / 20);
  for (float& v : x) v = float(std::clamp(double(v) * g, -level, level));
}

}  // namespace lt::audio
