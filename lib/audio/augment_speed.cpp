#include "audio/audio_file.h"
#include "audio/augment.h"
#include "audio/resampler.h"
#include "common/error.h"

namespace lt::audio {

std::vector<float> change_speed(const std::vector<float>& x, double factor) {
  check(factor >= 0.5 && factor <= 2, "speed factor " + std::to_string(factor) + " outside 0.5 .. 2");
  return resample(x, kSpeechSampleRate * factor, kSpeechSampleRate);
}

}  // namespace lt::audio
