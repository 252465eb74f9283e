// multipart/form-data (RFC 7578) as the upload endpoints receive it: the
// fields of one request body, parsed whole and strictly. Beast has no
// multipart parser; this one is small on purpose (and fuzzed:
// tests/fuzz/fuzz_server_requests.cpp). It copies nothing: a part's body is a
// view into the request body.
//
// Accepted: an optional preamble, parts separated by CRLF "--" boundary,
// each with header lines (Content-Disposition: form-data; name="..."[;
// filename="..."], optionally Content-Type) then a blank line, and a closing
// "--" boundary "--" (what follows it is ignored). Refused with one
// HttpError(400) line: a Content-Type without a boundary, a body without
// its closing boundary (a truncated upload), a part without a name, headers
// that are not "Name: value" or too long, more than max_parts parts.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lt::server {

struct FormPart {
  std::string name;          // the field's name
  std::string filename;      // as the client named its file (never used as a path); empty for a plain field
  std::string content_type;  // the part's Content-Type, if it gave one
  std::string_view body;     // the part's bytes, a view into the request body
};

constexpr size_t kMaxFormParts = 64;

// The boundary of a Content-Type header's value "multipart/form-data;
// boundary=...", quoted or not.
std::string multipart_boundary(std::string_view content_type);

std::vector<FormPart> parse_multipart(std::string_view content_type, std::string_view body,
                                      size_t max_parts = kMaxFormParts);

// The form's fields by name: the first part named `name`, or nullptr.
const FormPart* find_part(const std::vector<FormPart>& parts, std::string_view name);

}  // namespace lt::server
