// lt-asr's two ways through one input: the whole recording at once, or a
// stream decoded as it arrives (--stream).
#pragma once
#include <string>

#include "asr_output.h"
#include "lt.h"

namespace lt::app {

struct InputOptions {
  lt_audio_format raw = lt_audio_default_format();  // raw PCM layout, when the input has no header
  double follow = 0;     // --stream: seconds a file may stop growing before it has ended
};

// Reads path ("-": stdin) whole and transcribes it.
AsrResult transcribe_input(const std::string& path, lt_recognizer* recognizer, const InputOptions& options);

// Decodes path ("-": stdin) as its bytes arrive, printing phones through out
// as they settle; the result holds every phone when out keeps them.
AsrResult stream_input(const std::string& path, lt_recognizer* recognizer, const InputOptions& options, AsrOutput& out);

}  // namespace lt::app
