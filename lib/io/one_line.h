// Error messages are one line (lt/error.h), but the text they quote from a
// file (a tensor name, a file name found in a folder) may hold any byte.
#pragma once
#include <cstdio>
#include <string>

namespace lt::io {

// text with control bytes written as escapes (\n, \t, \x01), as JSON would.
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

}  // namespace lt::io
