#include "shipped_model.h"

#include <filesystem>
#include <vector>

#include "lt/error.h"

namespace lt::app {

std::string find_shipped_model(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    fs::path dir = exe.parent_path();
    candidates = {dir / "../share/lt/weights" / file, dir / "../../weights" / file, dir / "../weights" / file};
  }
  std::string tried;
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
    tried += (tried.empty() ? "" : ", ") + p.lexically_normal().string();
  }
  throw Error("no -m given and the shipped model " + file + " is not next to the executable (looked in " + tried +
              ")");
}

}  // namespace lt::app
