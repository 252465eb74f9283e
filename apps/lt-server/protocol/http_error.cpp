// The JSON of an error (http_error.h).
#include "http_error.h"

#include <nlohmann/json.hpp>

namespace lt::server {

std::string error_json(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lt::server
