// The one way a request or frame is refused: an HTTP status (or, on a
// WebSocket, a close code) and one line saying why. Every parser of client
// bytes throws this and nothing else for bad input; the sessions turn it into
// {"error": "..."} with the status, or that JSON then a close frame.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace lt::server {

// WebSocket close codes (RFC 6455, 7.4.1).
enum CloseCode : int {
  kCloseNormal = 1000,
  kCloseGoingAway = 1001,     // the server is shutting down
  kCloseBadData = 1007,       // a frame the protocol does not allow (wrong JSON, NaN samples, odd byte counts)
  kClosePolicy = 1008,        // a limit: stream length, idle time
  kCloseTooBig = 1009,        // a message over --max-message-bytes
  kCloseInternal = 1011       // the server failed
};

class HttpError : public std::runtime_error {
 public:
  // status: the HTTP status of a request's answer; close_code: what a
  // WebSocket closes with for the same fault.
  HttpError(int status, const std::string& message, int close_code = kCloseBadData)
      : std::runtime_error(message), status_(status), close_code_(close_code) {}
  int status() const { return status_; }
  int close_code() const { return close_code_; }

 private:
  int status_;
  int close_code_;
};

// A 400 (close 1007) unless `ok`.
inline void require(bool ok, const std::string& message) {
  if (!ok) throw HttpError(400, message);
}

}  // namespace lt::server

namespace lt::server {
// {"error": message} as JSON text; bytes that are not UTF-8 become U+FFFD.
std::string error_json(const std::string& message);
// A client's bytes quoted in an error: at most `max` of them, control bytes
// as '?', "..." when cut, so that an error stays one line.
std::string shown_text(std::string_view bytes, size_t max = 60);
}  // namespace lt::server
