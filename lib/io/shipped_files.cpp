// find_shipped_file: weights/ from LT_WEIGHTS, beside lt, the source tree.
#include "io/shipped_files.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "backend/loaded_from.h"
#include "common/error.h"

namespace lt {

namespace fs = std::filesystem;

const char* default_lexicon_path() { return "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"; }

namespace {

std::string lexicon() {
  std::error_code ec;
  const std::string path = default_lexicon_path();
  check(fs::is_regular_file(path, ec), std::string("the CMU dictionary ") + path +
                                           " is not installed (apt-get install pocketsphinx-en-us), or name a lexicon");
  return path;
}

// The folders a file of weights/ may be in, beside `base` (a bin/ or lib/).
void beside(const fs::path& base, std::vector<fs::path>& places) {
  for (const char* rel : {"../share/lt/weights", LT_LIBDIR_TO_WEIGHTS, "../../weights", "../weights"})
    places.push_back((base / rel).lexically_normal());
}

}  // namespace

std::string find_shipped_file(const std::string& name) {
  if (name == "lexicon") return lexicon();
  check(!name.empty() && name.find('/') == std::string::npos,
        "'" + name + "' is not the name of a shipped file (a file name of weights/, or 'lexicon')");
  std::error_code ec;
  const char* env = std::getenv("LT_WEIGHTS");
  if (env != nullptr && *env != '\0') {
    const fs::path p = fs::path(env) / name;
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
    throw Error("LT_WEIGHTS=" + std::string(env) + " has no " + name + " (looked in " + p.lexically_normal().string() +
                "); point LT_WEIGHTS at the folder holding it, or unset it");
  }

  std::vector<fs::path> folders;
  if (const std::string here = own_folder(); !here.empty()) beside(here, folders);
  if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) beside(exe.parent_path(), folders);
#ifdef LT_SOURCE_WEIGHTS_DIR
  folders.push_back(fs::path(LT_SOURCE_WEIGHTS_DIR).lexically_normal());
#endif
  std::string tried;
  std::vector<fs::path> seen;
  for (const fs::path& folder : folders) {
    const fs::path p = folder / name;
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
    bool repeated = false;  // a build inside the source tree reaches its weights/ more than once
    for (const fs::path& s : seen) repeated = repeated || s == p;
    if (repeated) continue;
    seen.push_back(p);
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  throw Error("the shipped file " + name + " was not found (LT_WEIGHTS unset; looked in " + tried +
              "); set LT_WEIGHTS to the folder holding it");
}

}  // namespace lt
