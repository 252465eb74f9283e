// Shared by the libFuzzer harnesses (README.md here): the readers take paths,
// so each input is written to a scratch file first, and the one accepted
// rejection, an lt::Error, is held to the message contract of common/error.h.
#pragma once
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"

namespace lt::fuzz {

// A folder of this process's own (libFuzzer's -jobs run several processes),
// in memory when /dev/shm exists: every input is a file write.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const std::filesystem::path root = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    const std::filesystem::path d = root / ("lt-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::fprintf(stderr, "harness: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// Whether a message holds a byte that a terminal would act on (a newline,
// an escape sequence): lt::Error escapes them all.
inline bool has_control_byte(const std::string& text) {
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// Runs read(). An lt::Error is the correct rejection when its message is one
// line without control bytes starting with `named` (the file or folder read);
// any other exception escapes to libFuzzer, which reports it as a crash.
template <class F>
void expect_lt_error_only(const std::string& named, F&& read) {
  try {
    read();
  } catch (const lt::Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(named, 0) != 0 || has_control_byte(msg)) {
      std::fprintf(stderr, "harness: message breaks the contract (one line naming %s):\n%s\n", named.c_str(),
                   msg.c_str());
      std::abort();
    }
  }
}

// The input cut at every kFileSeparator (in the dictionaries), at most
// max_parts parts, so that one input can make a folder of files.
inline const std::string kFileSeparator = "-LT-NEXT-FILE-";
inline std::vector<std::vector<uint8_t>> split_files(const uint8_t* data, size_t size, size_t max_parts) {
  std::vector<std::vector<uint8_t>> parts(1);
  const size_t n = kFileSeparator.size();
  for (size_t i = 0; i < size;) {
    if (parts.size() < max_parts && size - i >= n && kFileSeparator.compare(0, n, (const char*)data + i, n) == 0) {
      parts.emplace_back();
      i += n;
    } else {
      parts.back().push_back(data[i++]);
    }
  }
  return parts;
}

// data gzipped at a level 0-9 (for harnesses whose mutations should reach
// the bytes behind the compression).
inline std::vector<uint8_t> gzip(const uint8_t* data, size_t size, int level) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper, as gzip(1) writes.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<uint8_t> out(deflateBound(&z, uLong(size)) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = uInt(size);
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace lt::fuzz
