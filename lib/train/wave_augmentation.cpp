// The waveform side of speech augmentation: which of audio/augment.h's changes
// an utterance gets, and with what parameters, drawn from its key.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "audio/augment.h"
#include "common/error.h"
#include "common/random.h"
#include "train/speech_training.h"

namespace lt {

namespace {
// Draw d of a key; the numbers below name each draw once.
double draw(uint64_t key, int d) { return sample_uniform(key, 0, 0, d); }
enum : int { kSpeed, kSpeedBy, kReverb, kRt60, kDrr, kNoise, kSnr, kNoiseKind, kColour, kTalkers, kPhone, kLaw,
             kCodec, kWhichCodec, kClip, kGain };
double in(const WaveAugmentation::Draw& r, uint64_t key, int d) { return r.lo + (r.hi - r.lo) * draw(key, d); }

// Which changes the key draws, in augment_waveform's order.
struct Applied {
  bool speed, reverb, noise, telephone, codec, clip;
  bool any() const { return speed || reverb || noise || telephone || codec || clip; }
};
Applied applied(const WaveAugmentation& w, uint64_t key) {
  return {draw(key, kSpeed) < w.speed.p,     draw(key, kReverb) < w.reverb.p, draw(key, kNoise) < w.noise.p,
          draw(key, kPhone) < w.telephone.p, draw(key, kCodec) < w.codec.p,   draw(key, kClip) < w.clip.p};
}
}  // namespace

namespace {
// The shortest of %.15g and %.17g that reads back as v.
std::string exact_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.15g", v);
  if (std::strtod(s, nullptr) != v) std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}
}  // namespace

std::string wave_draw_text(const WaveAugmentation::Draw& d) {
  return exact_text(d.p) + ":" + exact_text(d.lo) + ":" + exact_text(d.hi);
}

WaveAugmentation::Draw parse_wave_draw(const std::string& flag, const std::string& text,
                                       const WaveAugmentation::Draw& defaults) {
  WaveAugmentation::Draw d = defaults;
  std::vector<double> v;
  const char* at = text.c_str();
  for (;;) {
    char* end = nullptr;
    v.push_back(std::strtod(at, &end));
    if (end == at) v.back() = NAN;
    at = end;
    if (*at != ':') break;
    ++at;
  }
  const bool ok = *at == '\0' && (v.size() == 1 || v.size() == 3) && std::isfinite(v[0]) && v[0] >= 0 && v[0] <= 1 &&
                  (v.size() == 1 || (std::isfinite(v[1]) && std::isfinite(v[2]) && v[1] <= v[2]));
  check(ok, flag + " '" + text + "': expected P or P:LO:HI, a probability in [0, 1] and LO <= HI");
  d.p = v[0];
  if (v.size() == 3) d.lo = v[1], d.hi = v[2];
  return d;
}

std::string WaveAugmentation::describe() const {
  std::string s;
  auto add = [&](const char* name, const Draw& d) {
    if (d.p > 0) s += (s.empty() ? "" : " ") + std::string(name) + "=" + wave_draw_text(d);
  };
  add("speed", speed), add("reverb", reverb), add("noise", noise);
  add("telephone", telephone), add("codec", codec), add("clipping", clip);
  return s;
}

std::vector<float> augment_waveform(std::vector<float> x, const WaveAugmentation& w, uint64_t key,
                                    const std::function<std::vector<float>(uint64_t)>& other) {
  const Applied on = applied(w, key);
  if (on.speed) x = audio::change_speed(x, in(w.speed, key, kSpeedBy));
  if (on.reverb)
    x = audio::reverberate(x, audio::room_impulse_response(in(w.reverb, key, kRt60), 10 * draw(key, kDrr),
                                                           splitmix64(key ^ 0x7007ull)));
  if (on.noise) {
    std::vector<float> noise;
    if (draw(key, kNoiseKind) < 0.5) {
      noise = audio::coloured_noise(x.size(), 2 * draw(key, kColour), splitmix64(key ^ 0x4015Eull));
    } else {
      std::vector<std::vector<float>> talkers;
      const int n = 3 + int(3 * draw(key, kTalkers));
      for (int t = 0; t < n; ++t) talkers.push_back(other(splitmix64(key ^ (0xBAB0ull + uint64_t(t)))));
      noise = audio::babble(talkers, x.size());
    }
    audio::add_noise(x, noise, in(w.noise, key, kSnr));
  }
  if (on.telephone) {
    x = audio::telephone_band(x);
    draw(key, kLaw) < 0.5 ? audio::mu_law(x) : audio::a_law(x);
  }
  if (on.codec)
    x = audio::codec_round_trip(x, audio::Codec(std::min(2, int(3 * draw(key, kWhichCodec)))));
  if (on.clip) audio::gain_and_clip(x, in(w.clip, key, kGain), 1.0);
  return x;
}

bool WaveAugmentation::changes(uint64_t key) const { return applied(*this, key).any(); }

}  // namespace lt
