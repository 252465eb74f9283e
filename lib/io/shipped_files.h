// The files lt ships, found by name the same way by the tools (with no -m,
// --phone-lm, --lm or --lexicon) and by programs through lt.h
// (lt_find_shipped, lt_recognizer_tool_options):
//
//  - the checkpoints and language models of weights/ ("mnist.safetensors",
//    "asr.safetensors", "asr-stream.safetensors", "speech-phones.arpa.gz",
//    "speech-words.arpa.gz", ...). Places, in order:
//      1. $LT_WEIGHTS, a folder, when set and not empty. It is then the only
//         place looked: a set LT_WEIGHTS that lacks the file is an error, not
//         a silent fall back to another copy.
//      2. Beside liblt.so.0 (or the tool that links lt), then beside the
//         program: <prefix>/share/lt/weights once installed, then ../../weights
//         and ../weights (a build folder inside the source tree).
//      3. The source tree's weights/ lt was built from (LT_SOURCE_WEIGHTS_DIR),
//         so that a build outside the source tree finds them too.
//  - "lexicon": the CMU dictionary that pronounces words (pocketsphinx-en-us's
//    cmudict-en-us.dict, a Debian package).
#pragma once
#include <string>

namespace lt {

// The CMU dictionary's path, whether or not it is installed.
const char* default_lexicon_path();

// The full path of the shipped file `name` from the places above; throws
// lt::Error, one line listing every path it looked at and what to do.
std::string find_shipped_file(const std::string& name);

}  // namespace lt
