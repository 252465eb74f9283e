// The checkpoints shipped in weights/, found without -m. Places, in order:
//   1. $LT_WEIGHTS, a folder, when set and not empty. It is then the only
//      place looked: a set LT_WEIGHTS that lacks the file is an error, not a
//      silent fall back to another copy.
//   2. Next to the executable: <prefix>/share/lt/weights once installed,
//      then ../../weights and ../weights (build/bin inside the source tree).
//   3. The source tree's weights/ this binary was built from
//      (LT_SOURCE_WEIGHTS_DIR, set by apps/CMakeLists.txt), so a build
//      outside the source tree finds them too.
#pragma once
#include <string>

namespace lt::app {

// Full path of <folder>/<file> from the places above; throws lt::Error, one
// line listing every path it looked at.
std::string find_shipped_model(const std::string& file);

}  // namespace lt::app
