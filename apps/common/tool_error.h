// The tools' own error: a one-line message (bad flags, a file that does not
// fit) that main prints after the tool's name before it exits non-zero, as
// it prints lt.h's failures (lt::api::Failure). Control bytes in what it
// quotes (a path, say) are written as escapes, so it stays one line.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace lt::app {

struct ToolError : std::runtime_error {
  explicit ToolError(const std::string& message) : std::runtime_error(one_line(message)) {}

  static std::string one_line(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
      if (c >= 0x20 && c != 0x7f) {
        out += char(c);
        continue;
      }
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : hex;
    }
    return out;
  }
};

// Throws ToolError(message) unless cond holds.
inline void check(bool cond, const std::string& message) {
  if (!cond) throw ToolError(message);
}

// "a copy", "an image": a noun with its article.
inline std::string with_article(const std::string& noun) {
  const bool vowel = !noun.empty() && std::string("aeiouAEIOU").find(noun[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + noun;
}

}  // namespace lt::app
