// The models lt-server loads once at start, from its command line only, and
// the names clients choose them by: each file's name without .safetensors
// ("asr-stream", "asr", "mnist"). The speech recognizers are set up as
// lt-asr's are by default with --words (beam 64, the shipped phone model,
// the default lexicon and the shipped word model), so that /asr equals
// lt-asr --stream --words and the file endpoints lt-asr --words.
#pragma once
#include <string>
#include <vector>

#include "lt.hpp"
#include "server_options.h"

namespace lt::server {

struct Models {
  lt::api::Recognizer stream;   // /asr
  lt::api::Recognizer offline;  // /inference, /v1/audio/transcriptions
  lt::api::Model image;         // /v1/images, /images/stream, /v1/images/completions
  lt_model_info image_info{};
  std::string stream_path, offline_path, image_path;
  std::vector<std::string> stream_names, offline_names, image_names;
};

// Loads every model, finding the shipped ones when no path was given;
// throws with one line naming the file that failed.
Models load_models(const ServerOptions& o);

// "weights/asr-stream.safetensors" -> "asr-stream".
std::string model_name(const std::string& path);

}  // namespace lt::server
