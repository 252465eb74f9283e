// HTTP/1.1 sessions and the routing of requests (http_session.h).
#include "http_session.h"

#include <boost/beast/websocket.hpp>
#include <limits>
#include <nlohmann/json.hpp>

#include "common_options.h"
#include "file_transcription.h"
#include "http_error.h"
#include "image_endpoints.h"
#include "lt.h"
#include "request_fields.h"
#include "websocket_asr.h"
#include "websocket_images.h"

namespace lt::server {

namespace websocket = beast::websocket;

namespace {

constexpr size_t kHeaderLimit = 16 * 1024;
constexpr double kOverLimitSeconds = 5;  // a connection over the limit gets this long to send its request

struct RouteInfo {
  const char* path;
  http::verb method;
  int route;  // HttpSession::Route
  const char* endpoint;
  bool key, upload, websocket;
};

const char* verb_name(http::verb v) { return http::to_string(v).data(); }

}  // namespace

template <class Stream>
HttpSession<Stream>::HttpSession(ServerContext& server, Stream&& stream, std::string client, ConnectionHold connection,
                                 bool over_limit)
    : server_(server),
      stream_(std::move(stream)),
      client_(std::move(client)),
      connection_(std::move(connection)),
      over_limit_(over_limit) {}

template <class Stream>
void HttpSession<Stream>::run() {
  auto self = this->shared_from_this();
  if constexpr (kIsTls<Stream>) {
    beast::get_lowest_layer(stream_).expires_after(seconds(server_.options.idle_seconds));
    stream_.async_handshake(net::ssl::stream_base::server, [self](beast::error_code ec) {
      if (ec) return;  // not TLS, or gone: nothing to answer in
      self->read_header();
    });
  } else {
    net::dispatch(stream_.get_executor(), [self] { self->read_header(); });
  }
}

template <class Stream>
void HttpSession<Stream>::read_header() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimit);
  // The body's limit depends on the endpoint: set once the header is read.
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  route_ = Route::none;
  endpoint_ = "other";
  close_after_ = false;
  beast::get_lowest_layer(stream_).expires_after(seconds(over_limit_ ? kOverLimitSeconds : server_.options.idle_seconds));
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

template <class Stream>
void HttpSession<Stream>::refuse(int status, const std::string& message, const char* reason) {
  if (reason) server_.metrics.rejected(reason);
  close_after_ = true;
  Response r = error_response(status, message);
  if (status == 429) r.set(http::field::retry_after, "1");
  if (status == 401) r.set(http::field::www_authenticate, "Bearer");
  answer(std::move(r));
}

template <class Stream>
void HttpSession<Stream>::on_header(beast::error_code ec) {
  if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof ||
      ec == net::error::connection_reset || ec == net::error::operation_aborted) {
    close();
    return;
  }
  busy_.emplace(server_.busy);
  keep_alive_ = false;
  version_ = 11;
  if (ec == http::error::header_limit) return refuse(431, "the request's header is over 16 KiB", "bad_request");
  if (ec) return refuse(400, "malformed HTTP request: " + ec.message(), "bad_request");
  const auto& req = parser_->get();
  keep_alive_ = req.keep_alive();
  version_ = req.version();

  if (over_limit_)
    return refuse(503, "too many connections (the server's limit is " + std::to_string(server_.connections.limit()) +
                           ")", "connections");
  Target target;
  try {
    target = parse_target(sv(req.target()));
  } catch (const HttpError& e) {
    return refuse(e.status(), e.what(), "bad_request");
  }
  if (target.path != "/health" && !server_.rate.allow(client_))
    return refuse(429, "too many requests from " + client_ + " (the limit is " +
                           std::to_string(server_.options.requests_per_second) + " a second)", "rate");

  static const RouteInfo routes[] = {
      {"/health", http::verb::get, int(Route::health), "health", false, false, false},
      {"/metrics", http::verb::get, int(Route::metrics), "metrics", true, false, false},
      {"/inference", http::verb::post, int(Route::inference), "inference", true, true, false},
      {"/v1/audio/transcriptions", http::verb::post, int(Route::transcriptions), "transcriptions", true, true, false},
      {"/v1/images", http::verb::post, int(Route::images), "images", true, false, false},
      {"/v1/images/completions", http::verb::post, int(Route::image_completions), "image_completions", true, true, false},
      {"/asr", http::verb::get, int(Route::asr), "asr", true, false, true},
      {"/images/stream", http::verb::get, int(Route::image_stream), "image_stream", true, false, true},
  };
  const RouteInfo* found = nullptr;
  for (const RouteInfo& r : routes)
    if (target.path == r.path) found = &r;
  if (!found) {
    if (server_.web.find(target.path) == nullptr)
      return refuse(404, "no endpoint " + std::string(verb_name(req.method())) + " " + shown_text(target.path, 100),
                    "not_found");
    static const RouteInfo page{"/", http::verb::get, int(Route::page), "page", false, false, false};
    found = &page;
  }
  endpoint_ = found->endpoint;
  if (req.method() != found->method) {
    close_after_ = true;
    Response r = error_response(405, std::string(verb_name(req.method())) + " is not allowed on " +
                                         shown_text(target.path, 100) + " (use " + verb_name(found->method) + ")");
    r.set(http::field::allow, verb_name(found->method));
    server_.metrics.rejected("method");
    return answer(std::move(r));
  }
  route_ = Route(found->route);
  if (server_.draining.load() && route_ != Route::health)
    return refuse(503, "the server is shutting down", "draining");
  if (found->key && server_.auth.required()) {
    std::string key = bearer_token(sv(req[http::field::authorization]));
    if (key.empty())
      if (const std::string* q = target.find("api_key")) key = *q;
    if (key.empty()) key = subprotocol_key(sv(req[http::field::sec_websocket_protocol]));
    if (!server_.auth.accepts(key))
      return refuse(401, key.empty() ? "an API key is required (Authorization: Bearer KEY)" : "wrong API key", "auth");
  }
  if (found->websocket) {
    if (!websocket::is_upgrade(req))
      return refuse(400, std::string(found->path) + " is a WebSocket: connect with an upgrade request", "bad_request");
    return upgrade();
  }
  const int64_t limit = found->upload ? server_.options.max_upload_bytes : server_.options.max_message_bytes;
  parser_->body_limit(uint64_t(limit));
  if (const auto length = parser_->content_length(); length && *length > uint64_t(limit))
    return refuse(413, "the request body of " + std::to_string(*length) + " bytes is over the limit of " +
                           std::to_string(limit), found->upload ? "upload_size" : "message_size");
  auto read_body = [self = this->shared_from_this()] {
    beast::get_lowest_layer(self->stream_).expires_after(seconds(self->server_.options.idle_seconds));
    http::async_read(self->stream_, self->buffer_, *self->parser_,
                     [self](beast::error_code ec, size_t) { self->on_body(ec); });
  };
  if (beast::iequals(req[http::field::expect], "100-continue") && !parser_->is_done()) {
    continue_ = std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
    http::async_write(stream_, *continue_, [self = this->shared_from_this(), read_body](beast::error_code ec, size_t) {
      if (ec) return self->close();
      read_body();
    });
    return;
  }
  read_body();
}

template <class Stream>
void HttpSession<Stream>::on_body(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    const bool upload = route_ != Route::images;
    return refuse(413, "the request body is over the limit of " +
                           std::to_string(upload ? server_.options.max_upload_bytes : server_.options.max_message_bytes) +
                           " bytes", upload ? "upload_size" : "message_size");
  }
  if (ec == http::error::partial_message || ec == http::error::end_of_stream || ec == net::error::eof)
    return refuse(400, "the request ended before its body did (a truncated upload)", "truncated");
  if (ec == beast::error::timeout)
    return refuse(408, "the request's body did not arrive within " +
                           std::to_string(int64_t(server_.options.idle_seconds)) + " s", "idle");
  if (ec) return refuse(400, "malformed HTTP request body: " + ec.message(), "bad_request");
  dispatch();
}

template <class Stream>
void HttpSession<Stream>::dispatch() {
  beast::get_lowest_layer(stream_).expires_never();
  const Request req = parser_->release();
  auto self = this->shared_from_this();
  // Answers may come from the compute thread or the file worker: they are
  // posted to this session's strand.
  Respond respond = [self](Response r) {
    net::post(self->stream_.get_executor(), [self, r = std::move(r)]() mutable { self->answer(std::move(r)); });
  };
  try {
    switch (route_) {
      case Route::health: {
        const bool draining = server_.draining.load();
        nlohmann::json j = {{"status", draining ? "draining" : "ok"},
                            {"version", lt_version()},
                            {"connections", server_.metrics.connections.load()},
                            {"live_streams", server_.metrics.live_streams.load()},
                            {"precision", lt::app::precision_name(server_.options.bf16, server_.options.tf32)}};
        return answer(json_response(draining ? 503 : 200, j.dump()));
      }
      case Route::metrics: {
        Response r = body_response(200, server_.metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
        return answer(std::move(r));
      }
      case Route::page: {
        const WebFile* f = server_.web.find(parse_target(sv(req.target())).path);
        Response r = body_response(200, f->body, f->content_type);
        r.set(http::field::cache_control, "no-cache");
        r.set("Content-Security-Policy",
              "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data: blob:; style-src 'self'");
        return answer(std::move(r));
      }
      case Route::inference:
      case Route::transcriptions:
        return handle_transcription(server_, req, std::move(respond));
      case Route::images:
        return handle_images(server_, req, std::move(respond));
      case Route::image_completions:
        return handle_image_completions(server_, req, std::move(respond));
      default:
        return refuse(500, "a request without a route", nullptr);
    }
  } catch (const HttpError& e) {
    server_.metrics.rejected(e.status() == 413 ? "upload_size" : "bad_request");
    answer(error_response(e.status(), e.what()));
  } catch (const std::exception& e) {
    answer(error_response(500, e.what()));
  }
}

template <class Stream>
void HttpSession<Stream>::upgrade() {
  // The request stays the parser's until the WebSocket session takes it.
  Request req = parser_->release();
  const std::string offered(req[http::field::sec_websocket_protocol]);
  std::string protocol;
  if (offers_subprotocol(offered, "lt"))
    protocol = "lt";
  else if (!subprotocol_key(offered).empty())
    protocol = std::string(kKeySubprotocolPrefix) + subprotocol_key(offered);
  beast::get_lowest_layer(stream_).expires_never();
  if (route_ == Route::asr) {
    SlotHold stream_slot;
    if (server_.streams.try_take()) {
      stream_slot = SlotHold(&server_.streams);
    } else {
      route_ = Route::none;
      return refuse(503, "too many live streams (the server's limit is " + std::to_string(server_.streams.limit()) + ")",
                    "streams");
    }
    server_.metrics.request(endpoint_, 101);
    std::make_shared<AsrSession<Stream>>(server_, std::move(stream_), std::move(connection_), std::move(stream_slot))
        ->run(std::move(req), protocol);
  } else {
    server_.metrics.request(endpoint_, 101);
    std::make_shared<ImageStreamSession<Stream>>(server_, std::move(stream_), std::move(connection_))
        ->run(std::move(req), protocol);
  }
  busy_.reset();
}

template <class Stream>
void HttpSession<Stream>::answer(Response r) {
  const int status = int(r.result_int());
  server_.metrics.request(endpoint_, status);
  if (status >= 400) close_after_ = true;
  if (server_.draining.load()) close_after_ = true;
  r.version(version_);
  r.keep_alive(keep_alive_ && !close_after_);
  r.set(http::field::server, "lt-server");
  r.set("X-Content-Type-Options", "nosniff");
  r.prepare_payload();
  response_ = std::make_shared<Response>(std::move(r));
  beast::get_lowest_layer(stream_).expires_after(seconds(server_.options.idle_seconds));
  http::async_write(stream_, *response_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
    const bool again = !ec && self->response_->keep_alive();
    self->response_.reset();
    self->busy_.reset();
    if (again)
      self->read_header();
    else
      self->close();
  });
}

template <class Stream>
void HttpSession<Stream>::close() {
  busy_.reset();
  if constexpr (kIsTls<Stream>) {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(2));
    stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
  } else {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }
}

template class HttpSession<PlainStream>;
template class HttpSession<TlsStream>;

}  // namespace lt::server
