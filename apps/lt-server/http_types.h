// The HTTP vocabulary the endpoints share: Beast's request and response
// with string bodies, an asynchronous answer (callable from any thread: the
// session posts it to its strand), and the JSON error every refusal is.
#pragma once
#include <boost/beast/http.hpp>
#include <functional>
#include <string>

namespace lt::server {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
using Respond = std::function<void(Response)>;

// {"error": message} with the status; the session sets version, keep-alive
// and length.
Response error_response(int status, const std::string& message);
Response json_response(int status, const std::string& json);
Response body_response(int status, std::string body, const std::string& content_type);

}  // namespace lt::server
