// Unlinked temporary files for uploads (private_file.h).
#include "private_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "http_error.h"

namespace lt::server {

PrivateFile::PrivateFile(std::string_view bytes) {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/lt-server-upload-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd_ = ::mkstemp(name.data());
  if (fd_ < 0) throw HttpError(500, std::string("cannot make a temporary file for the upload: ") + std::strerror(errno),
                              kCloseInternal);
  ::unlink(name.data());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd_);
      fd_ = -1;
      throw HttpError(error == ENOSPC ? 507 : 500,
                      std::string("cannot store the upload: ") + std::strerror(error), kCloseInternal);
    }
    done += size_t(n);
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

PrivateFile::~PrivateFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string PrivateFile::rename_in_message(std::string message, const std::string& name) const {
  for (size_t at = message.find(path_); at != std::string::npos; at = message.find(path_, at + name.size()))
    message.replace(at, path_.size(), name);
  return message;
}

}  // namespace lt::server
