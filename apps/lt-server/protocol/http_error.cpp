// The JSON of an error (http_error.h).
#include "http_error.h"

#include <nlohmann/json.hpp>

namespace lt::server {

std::string error_json(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string shown_text(std::string_view bytes, size_t max) {
  std::string out;
  for (char c : bytes.substr(0, max)) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  return out + (bytes.size() > max ? "..." : "");
}

}  // namespace lt::server
