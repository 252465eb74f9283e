// Responses every endpoint builds (http_types.h).
#include "http_types.h"

#include "http_error.h"

namespace lt::server {

Response body_response(int status, std::string body, const std::string& content_type) {
  Response r{http::int_to_status(unsigned(status)), 11};
  r.set(http::field::content_type, content_type);
  r.set(http::field::cache_control, "no-store");
  r.body() = std::move(body);
  return r;
}

Response json_response(int status, const std::string& json) { return body_response(status, json, "application/json"); }

Response error_response(int status, const std::string& message) { return json_response(status, error_json(message)); }

}  // namespace lt::server
