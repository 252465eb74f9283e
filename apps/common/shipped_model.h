// The checkpoints and language models shipped in weights/, found without -m,
// --phone-lm or --lm: lt_find_shipped (lt.h), the one lookup the tools and
// programs share (lib/io/shipped_files.h lists the places, LT_WEIGHTS first
// and, when set, only).
#pragma once
#include <string>

namespace lt::app {

// Full path of the shipped `file`; throws lt::api::Failure, one line listing
// every path it looked at.
std::string find_shipped_model(const std::string& file);

}  // namespace lt::app
