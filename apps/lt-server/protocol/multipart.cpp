// multipart/form-data, strictly (multipart.h): one pass over the body with
// find(), no copies of part bodies, every fault one HttpError(400).
#include "multipart.h"

#include <algorithm>
#include <cctype>

#include "http_error.h"

namespace lt::server {

namespace {

constexpr size_t kMaxPartHeaderBytes = 8192;
constexpr size_t kMaxPartHeaderLines = 16;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
}

// `; name=value` parameters after a header's first item, values as tokens or
// quoted strings (backslash escapes one character). Calls f(name, value) per
// parameter; returns the first item.
template <class F>
std::string_view parse_parameters(std::string_view header, const char* what, F f) {
  size_t i = header.find(';');
  const std::string_view first = trim(header.substr(0, i));
  while (i != std::string_view::npos) {
    ++i;  // past ';'
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t')) ++i;
    if (i == header.size()) break;  // a trailing ';'
    const size_t eq = header.find('=', i);
    require(eq != std::string_view::npos, std::string(what) + ": a parameter without '='");
    const std::string_view name = trim(header.substr(i, eq - i));
    require(!name.empty(), std::string(what) + ": a parameter without a name");
    i = eq + 1;
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t')) ++i;
    std::string value;
    if (i < header.size() && header[i] == '"') {
      ++i;
      bool closed = false;
      while (i < header.size()) {
        const char c = header[i++];
        if (c == '\\' && i < header.size()) {
          value += header[i++];
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value += c;
        }
      }
      require(closed, std::string(what) + ": an unclosed quoted value");
      while (i < header.size() && (header[i] == ' ' || header[i] == '\t')) ++i;
      require(i == header.size() || header[i] == ';', std::string(what) + ": text after a quoted value");
    } else {
      const size_t end = header.find(';', i);
      value = std::string(trim(header.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i)));
      i = end == std::string_view::npos ? header.size() : end;
    }
    f(name, value);
    i = header.find(';', i);
  }
  return first;
}

}  // namespace

std::string multipart_boundary(std::string_view content_type) {
  std::string boundary;
  bool seen = false;
  const std::string_view type = parse_parameters(content_type, "Content-Type", [&](std::string_view n, const std::string& v) {
    if (iequals(n, "boundary")) {
      require(!seen, "Content-Type: two boundaries");
      seen = true;
      boundary = v;
    }
  });
  if (!iequals(type, "multipart/form-data"))
    throw HttpError(415, "expected a multipart/form-data body, got Content-Type '" + shown_text(type) + "'");
  require(seen, "Content-Type multipart/form-data without a boundary");
  require(!boundary.empty() && boundary.size() <= 70 && printable(boundary),
          "multipart boundary must be 1 to 70 printable characters");
  return boundary;
}

std::vector<FormPart> parse_multipart(std::string_view content_type, std::string_view body, size_t max_parts) {
  const std::string delimiter = "--" + multipart_boundary(content_type);
  const std::string next = "\r\n" + delimiter;
  size_t pos;
  if (body.substr(0, delimiter.size()) == delimiter) {
    pos = delimiter.size();
  } else {
    const size_t at = body.find(next);
    require(at != std::string_view::npos, "multipart body without its boundary (empty or truncated upload?)");
    pos = at + next.size();
  }
  std::vector<FormPart> parts;
  for (;;) {
    if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter; an epilogue may follow
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    require(body.substr(pos, 2) == "\r\n", pos >= body.size() ? "multipart body ends after a boundary (truncated upload)"
                                                             : "multipart boundary line not followed by CRLF");
    pos += 2;
    require(parts.size() < max_parts, "more than " + std::to_string(max_parts) + " parts in a multipart body");

    FormPart part;
    bool disposition = false;
    const size_t headers_start = pos;
    for (size_t lines = 0;; ++lines) {
      const size_t eol = body.find("\r\n", pos);
      require(eol != std::string_view::npos, "multipart part headers end early (truncated upload)");
      require(eol - headers_start <= kMaxPartHeaderBytes && lines <= kMaxPartHeaderLines,
              "multipart part headers are too long");
      const std::string_view line = body.substr(pos, eol - pos);
      pos = eol + 2;
      if (line.empty()) break;
      const size_t colon = line.find(':');
      require(colon != std::string_view::npos && colon > 0 && line[0] != ' ' && line[0] != '\t',
              "a multipart part header is not 'Name: value'");
      const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
      require(printable(line) && name.find_first_of(" \t") == std::string_view::npos,
              "a multipart part header holds control characters or spaces in its name");
      if (iequals(name, "Content-Disposition")) {
        require(!disposition, "a multipart part with two Content-Disposition headers");
        disposition = true;
        bool named = false;
        const std::string_view kind = parse_parameters(value, "Content-Disposition", [&](std::string_view n,
                                                                                          const std::string& v) {
          if (iequals(n, "name")) {
            require(!named, "Content-Disposition: two names");
            named = true;
            part.name = v;
          } else if (iequals(n, "filename")) {
            part.filename = v;
          }
        });
        require(iequals(kind, "form-data"), "a multipart part's Content-Disposition is not form-data");
        require(named && !part.name.empty(), "a multipart part without a name");
      } else if (iequals(name, "Content-Type")) {
        part.content_type = std::string(value);
      }
    }
    require(disposition, "a multipart part without Content-Disposition");
    const size_t end = body.find(next, pos);
    require(end != std::string_view::npos, "multipart body without its closing boundary (truncated upload)");
    part.body = body.substr(pos, end - pos);
    parts.push_back(std::move(part));
    pos = end + next.size();
  }
}

const FormPart* find_part(const std::vector<FormPart>& parts, std::string_view name) {
  for (const FormPart& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace lt::server
