// The page lt-server serves at / (web/: index.html, app.js, ...), read into
// memory once at start: a request names one of these files or gets 404, so
// no path from a client reaches the file system. The folder is --web, else
// <prefix>/share/lt/web beside the installed binary, else the source tree's
// apps/lt-server/web this binary was built from (LT_SOURCE_WEB_DIR), as the
// shipped weights are found (apps/common/shipped_model.h).
#pragma once
#include <map>
#include <string>

namespace lt::server {

struct WebFile {
  std::string body, content_type;
};

class WebFiles {
 public:
  // Reads every file of the folder; throws naming the places it looked.
  explicit WebFiles(const std::string& folder_flag);
  // "/" -> index.html, "/app.js" -> app.js; nullptr for anything else.
  const WebFile* find(const std::string& path) const;
  const std::string& folder() const { return folder_; }

 private:
  std::string folder_;
  std::map<std::string, WebFile> files_;
};

}  // namespace lt::server
