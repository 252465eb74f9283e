#include "audio/resampler.h"
#include "lt/audio.h"
#include "lt/augment.h"
#include "lt/error.h"

namespace lt::audio {

std::vector<float> change_speed(const std::vector<float>& x, double factor) {
  check(factor >= 0.5 && factor <= 2, "speed factor " + std::to_string(factor) + " outside 0.5 .. 2");
  return resample(x, kSpeechSampleRate * factor, kSpeechSampleRate);
}

}  // namespace lt::audio
