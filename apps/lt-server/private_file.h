// An upload handed to a library reader that takes a path: written to a file
// made by mkstemp in $TMPDIR (else /tmp) and unlinked at once, then read
// through /proc/self/fd/N, so nothing is left behind even if the server is
// killed, and no name the client chose ever reaches the file system.
#pragma once
#include <string>
#include <string_view>

namespace lt::server {

class PrivateFile {
 public:
  explicit PrivateFile(std::string_view bytes);  // HttpError(507/500) when it cannot be written
  ~PrivateFile();
  PrivateFile(const PrivateFile&) = delete;
  PrivateFile& operator=(const PrivateFile&) = delete;
  const std::string& path() const { return path_; }
  // A library message naming path() with `name` in its place.
  std::string rename_in_message(std::string message, const std::string& name) const;

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace lt::server
