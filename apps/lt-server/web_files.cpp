// The page's files, found and read once (web_files.h).
#include "web_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "tool_error.h"

namespace lt::server {

namespace {
namespace fs = std::filesystem;

std::string content_type(const fs::path& p) {
  const std::string ext = p.extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".png") return "image/png";
  if (ext == ".svg") return "image/svg+xml";
  return "application/octet-stream";
}

std::string find_folder(const std::string& flag) {
  if (!flag.empty()) {
    lt::app::check(fs::is_regular_file(fs::path(flag) / "index.html"), "--web " + flag + ": no index.html there");
    return flag;
  }
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / "../share/lt/web").lexically_normal());
#ifdef LT_SOURCE_WEB_DIR
  candidates.push_back(fs::path(LT_SOURCE_WEB_DIR).lexically_normal());
#endif
  std::string tried;
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p / "index.html", ec)) return p.string();
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  throw lt::app::ToolError("the web page's folder was not found (looked in " + tried + "); give --web DIR");
}
}  // namespace

WebFiles::WebFiles(const std::string& folder_flag) : folder_(find_folder(folder_flag)) {
  for (const fs::directory_entry& e : fs::directory_iterator(folder_)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream body;
    body << in.rdbuf();
    lt::app::check(in.good() || in.eof(), e.path().string() + ": cannot read");
    files_["/" + e.path().filename().string()] = {body.str(), content_type(e.path())};
  }
}

const WebFile* WebFiles::find(const std::string& path) const {
  const auto it = files_.find(path == "/" ? "/index.html" : path);
  return it == files_.end() ? nullptr : &it->second;
}

}  // namespace lt::server
