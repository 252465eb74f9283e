// lt::Error: the one exception type of the library. Its message is a single
// line that names the file, tensor or shape at fault, so a tool can print it
// as is and exit non-zero.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace lt {

// text with control bytes written as escapes (\n, \t, \x01), as JSON would.
namespace detail {
inline std::string one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else out += char(c);
  }
  return out;
}
}  // namespace detail

// What a message quotes from a file (a metadata string, a tensor or file
// name) may hold any byte: the constructor escapes control bytes, so every
// message is one line without each one having to remember it.
struct Error : std::runtime_error {
  explicit Error(const std::string& message) : std::runtime_error(detail::one_line(message)) {}
  explicit Error(const char* message) : Error(std::string(message)) {}
};

// A device (or the limit set_memory_limit put on it) had no room for an
// allocation. Training catches it to split a batch into smaller passes.
struct OutOfMemory : Error {
  using Error::Error;
};

// Throws lt::Error(message) when cond is false. A message built by
// concatenation is built even when cond holds: in per-frame or per-element
// code, write `if (!cond) throw Error(...)` instead.
inline void check(bool cond, const std::string& message) {
  if (!cond) throw Error(message);
}
// A literal makes no string unless it is thrown.
inline void check(bool cond, const char* message) {
  if (!cond) throw Error(message);
}

// "a copy", "an image": a noun (a model family, say) with its article, for
// messages that name one they were given.
inline std::string with_article(const std::string& noun) {
  const bool vowel = !noun.empty() && std::string("aeiouAEIOU").find(noun[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + noun;
}

}  // namespace lt
