// The checkpoints shipped in weights/, found next to the executable: in
// <prefix>/share/lt/weights once installed, in the source tree's weights/
// when run from build/bin, so tools work with no -m after the README's set-up.
#pragma once
#include <string>

namespace lt::app {

// Full path of weights/<file>; throws lt::Error listing where it looked.
std::string find_shipped_model(const std::string& file);

}  // namespace lt::app
