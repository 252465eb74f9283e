#include "shipped_model.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace lt::app {

std::string find_shipped_model(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* env = std::getenv("LT_WEIGHTS");
  if (env != nullptr && *env != '\0') {
    const fs::path p = fs::path(env) / file;
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
    throw Error("no -m given and LT_WEIGHTS=" + std::string(env) + " has no " + file + " (looked in " +
                p.lexically_normal().string() + "); point LT_WEIGHTS at the folder holding it, unset it, or give -m");
  }

  std::vector<fs::path> candidates;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = exe.parent_path();
    for (const char* rel : {"../share/lt/weights", "../../weights", "../weights"})
      candidates.push_back((dir / rel / file).lexically_normal());
  }
#ifdef LT_SOURCE_WEIGHTS_DIR
  candidates.push_back((fs::path(LT_SOURCE_WEIGHTS_DIR) / file).lexically_normal());
#endif
  std::string tried;
  std::vector<fs::path> seen;
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
    bool repeated = false;  // an in-tree build/bin reaches the source weights/ twice
    for (const fs::path& s : seen) repeated = repeated || s == p;
    if (repeated) continue;
    seen.push_back(p);
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  throw Error("no -m given and the shipped model " + file + " was not found (LT_WEIGHTS unset; looked in " + tried +
              "); set LT_WEIGHTS to the folder holding it or give -m");
}

}  // namespace lt::app
