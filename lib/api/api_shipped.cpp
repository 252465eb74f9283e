// lt.h: the files lt ships, found as the tools find them (io/shipped_files.h),
// and a recognizer set up as lt-asr sets one up when given no options.
#include <mutex>
#include <set>
#include <string>

#include "api_internal.h"
#include "io/shipped_files.h"

using lt::api::require;

namespace {
// Paths handed out for the life of the process (lt_recognizer_tool_options):
// a set's strings never move.
const char* kept(const std::string& path) {
  static std::mutex lock;
  static std::set<std::string> paths;
  std::lock_guard<std::mutex> hold(lock);
  return paths.insert(path).first->c_str();
}
}  // namespace

lt_status lt_find_shipped(const char* name, char** path) {
  if (path) *path = nullptr;
  return lt::api::guarded([&] {
    require(name, "name");
    require(path, "path");
    const std::string found = lt::find_shipped_file(name);
    *path = lt::api::caller_copy(found.c_str(), found.size() + 1);
  });
}

lt_status lt_recognizer_tool_options(int words, lt_recognizer_options* options) {
  return lt::api::guarded([&] {
    require(options, "options");
    lt_recognizer_options o = lt_recognizer_default_options();
    o.beam = LT_ASR_BEAM;
    o.phone_lm = kept(lt::find_shipped_file("speech-phones.arpa.gz"));
    if (words) {
      o.lexicon = kept(lt::find_shipped_file("lexicon"));
      o.word_lm = kept(lt::find_shipped_file("speech-words.arpa.gz"));
    }
    *options = o;
  });
}
