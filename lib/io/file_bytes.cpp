#include "io/file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/error.h"

namespace lt::io {

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw Error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f.get())) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  if (std::ferror(f.get())) throw Error(path + ": read error: " + std::strerror(errno));
  return bytes;
}

void write_file_atomically(const std::string& path, const void* data, size_t size) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  // A full disk may only show at fclose, when the buffer is flushed.
  const bool written = std::fwrite(data, 1, size, f) == size;
  const int write_err = errno;
  const bool closed = std::fclose(f) == 0;
  const int close_err = errno;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot write " + tmp + ": " + std::strerror(written ? close_err : write_err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename " + tmp + " over it: " + std::strerror(err));
  }
}

}  // namespace lt::io
