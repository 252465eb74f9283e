// One client connection speaking HTTP/1.1 (keep-alive), until it closes or
// upgrades to a WebSocket. Per request: read the header; refuse at once what
// the header already condemns (over the connection limit, over the rate,
// no such endpoint, no key, a body over its limit, a shutdown in progress);
// answer "Expect: 100-continue"; read the body; route it. Every refusal is
// one JSON error ({"error": "..."}) with its status, after which the
// connection closes. An upgrade on /asr or /images/stream hands the
// connection to its WebSocket session.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "http_types.h"
#include "server_context.h"
#include "transport.h"

namespace lt::server {

template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  // over_limit: the connection is beyond --max-connections: its first
  // request is answered 503.
  HttpSession(ServerContext& server, Stream&& stream, std::string client, ConnectionHold connection, bool over_limit);
  void run();

 private:
  enum class Route { none, health, metrics, page, inference, transcriptions, images, image_completions, asr, image_stream };

  void read_header();
  void on_header(beast::error_code ec);
  void on_body(beast::error_code ec);
  void upgrade();
  void dispatch();
  // Writes r (on the strand), then reads the next request or closes.
  void answer(Response r);
  void refuse(int status, const std::string& message, const char* reason);
  void close();

  ServerContext& server_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string client_;
  ConnectionHold connection_;
  bool over_limit_;
  Route route_ = Route::none;
  const char* endpoint_ = "other";
  bool keep_alive_ = false, close_after_ = false;
  unsigned version_ = 11;
  std::optional<BusyHold> busy_;
  std::shared_ptr<Response> response_;
  std::shared_ptr<http::response<http::empty_body>> continue_;
};

}  // namespace lt::server
