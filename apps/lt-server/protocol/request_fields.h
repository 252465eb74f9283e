// The small fields of requests, parsed strictly: request targets and their
// query strings (percent-decoded), whole numbers and seeds from form fields,
// and the JSON of an image request (POST /v1/images, the first message of
// /images/stream). Every fault is one HttpError(400) line naming the field.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lt::server {

// "%41+b" -> "A b" (plus_is_space: query strings); a '%' not followed by two
// hex digits is an error.
std::string percent_decode(std::string_view s, bool plus_is_space);

// A request target "/path?a=1&b=2": the path as sent (not decoded: routes are
// matched exactly, and no path names a file) and the decoded query.
struct Target {
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  const std::string* find(std::string_view name) const;  // the first value of name, or nullptr
};
Target parse_target(std::string_view target);

// A whole number in [min, max] from a field's text ("count", "keep_rows").
int64_t parse_whole_number(std::string_view text, const char* field, int64_t min, int64_t max);
// A seed: 0 .. 2^64-1.
uint64_t parse_seed(std::string_view text);

// The names a client may choose a model by; an unknown one is an error
// listing them.
void check_model_name(const std::string& name, const std::vector<std::string>& known, const char* what);

struct ImageRequest {
  int64_t count = 1;
  uint64_t seed = 0;
  bool seed_given = false;  // else the server draws one and says which
};
// {"count": N, "seed": S, "model": "name"}, each optional; other keys are
// refused (so that a typo does not pass unnoticed).
ImageRequest parse_image_request(std::string_view json, int64_t max_count, const std::vector<std::string>& models);

}  // namespace lt::server
