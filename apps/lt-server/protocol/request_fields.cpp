// Request fields, strictly (request_fields.h).
#include "request_fields.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "http_error.h"

namespace lt::server {

namespace {
int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
std::string shown(std::string_view s) { return shown_text(s, 40); }
}  // namespace

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      require(i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0,
              "a '%' in the request target not followed by two hex digits");
      out += char(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += plus_is_space && s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

const std::string* Target::find(std::string_view name) const {
  for (const auto& [k, v] : query)
    if (k == name) return &v;
  return nullptr;
}

Target parse_target(std::string_view target) {
  Target t;
  const size_t q = target.find('?');
  t.path = std::string(target.substr(0, q));
  if (q == std::string_view::npos) return t;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (item.empty()) continue;
    require(t.query.size() < 64, "more than 64 query parameters");
    const size_t eq = item.find('=');
    t.query.emplace_back(percent_decode(item.substr(0, eq), true),
                         eq == std::string_view::npos ? std::string() : percent_decode(item.substr(eq + 1), true));
  }
  return t;
}

int64_t parse_whole_number(std::string_view text, const char* field, int64_t min, int64_t max) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  require(ec == std::errc() && end == text.data() + text.size() && v >= min && v <= max,
          std::string(field) + " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
              ", not '" + shown(text) + "'");
  return v;
}

uint64_t parse_seed(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  require(ec == std::errc() && end == text.data() + text.size(),
          "seed must be a whole number from 0 to 18446744073709551615, not '" + shown(text) + "'");
  return v;
}

void check_model_name(const std::string& name, const std::vector<std::string>& known, const char* what) {
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  throw HttpError(400, "unknown model '" + shown(name) + "' (this server's " + what + " models: " + list + ")");
}

ImageRequest parse_image_request(std::string_view json, int64_t max_count, const std::vector<std::string>& models) {
  const nlohmann::json j = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  require(!j.is_discarded() && j.is_object(),
          "expected a JSON object such as {\"count\": 1, \"seed\": 7}, got '" + shown(json) + "'");
  ImageRequest r;
  for (const auto& [key, value] : j.items()) {
    if (key == "count") {
      require(value.is_number_integer() && value.get<int64_t>() >= 1 && value.get<int64_t>() <= max_count,
              "count must be a whole number from 1 to " + std::to_string(max_count));
      r.count = value.get<int64_t>();
    } else if (key == "seed") {
      require(value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0),
              "seed must be a whole number from 0 to 18446744073709551615");
      r.seed = value.get<uint64_t>();
      r.seed_given = true;
    } else if (key == "model") {
      require(value.is_string(), "model must be a model's name");
      check_model_name(value.get<std::string>(), models, "image");
    } else {
      throw HttpError(400, "unknown field '" + shown(key) + "' (an image request has count, seed and model)");
    }
  }
  return r;
}

}  // namespace lt::server
