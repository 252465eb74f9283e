// What both WebSocket sessions share, over Beast's websocket::stream on a
// plain or TLS connection: the upgrade (echoing the subprotocol chosen), a
// read loop with its own bound on a message's size (read in pieces, so that
// an oversized message is refused with a JSON error before the close rather
// than by Beast's bare 1009), a queue of text messages written one at a
// time, an idle timer, and the way out: fail() sends {"error": "..."} and
// closes with a code and reason; close() closes once the queue is written.
// Derived (CRTP) provides on_open(), on_message(text, bytes), on_gone().
#pragma once
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "http_error.h"
#include "http_types.h"
#include "server_context.h"
#include "transport.h"

namespace lt::server {

namespace websocket = beast::websocket;

template <class Stream, class Derived>
class WebSocketConnection : public std::enable_shared_from_this<Derived> {
 protected:
  WebSocketConnection(ServerContext& server, Stream&& stream, ConnectionHold connection)
      : server_(server),
        ws_(std::move(stream)),
        connection_(std::move(connection)),
        busy_(server.busy),
        idle_(ws_.get_executor()) {}

  Derived& derived() { return static_cast<Derived&>(*this); }

  void accept(Request req, const std::string& protocol) {
    upgrade_ = std::move(req);  // kept while the handshake runs
    websocket::stream_base::timeout t{};
    t.handshake_timeout = std::chrono::seconds(10);
    t.idle_timeout = websocket::stream_base::none();  // our own idle timer says why it closes
    t.keep_alive_pings = false;
    ws_.set_option(t);
    ws_.set_option(websocket::stream_base::decorator([protocol](websocket::response_type& res) {
      res.set(http::field::server, "lt-server");
      if (!protocol.empty()) res.set(http::field::sec_websocket_protocol, protocol);
    }));
    ws_.read_message_max(0);  // read_message() bounds messages itself
    ws_.auto_fragment(false);
    ws_.async_accept(upgrade_, [self = this->shared_from_this()](beast::error_code ec) {
      if (ec) return self->gone();
      self->derived().on_open();
    });
  }

  // Reads the next whole message into message_, then on_message().
  void read_message() {
    if (reading_ || closing_) return;
    reading_ = true;
    message_.clear();
    read_piece();
  }

  void send(std::string text) {
    if (close_code_) return;
    outbox_.push_back(std::move(text));
    if (!writing_) write_next();
  }

  // One JSON error, then the close; nothing more is read or sent.
  void fail(int code, const std::string& message, const char* reason) {
    if (closing_) return;
    if (reason) server_.metrics.rejected(reason);
    send(error_json(message));
    close(code, message);
  }

  void close(int code, const std::string& reason) {
    if (closing_) return;
    closing_ = true;
    idle_.cancel();
    // A close reason is at most 123 bytes of UTF-8 (RFC 6455, 5.5): ASCII
    // here, the whole message being in the JSON error before it.
    std::string r = reason.substr(0, 123);
    for (char& c : r)
      if (static_cast<unsigned char>(c) >= 0x80 || static_cast<unsigned char>(c) < 0x20) c = '?';
    close_code_ = websocket::close_reason(websocket::close_code(code), r);
    if (!writing_) write_next();
    derived().on_gone();
  }

  void arm_idle() {
    if (closing_) return;
    idle_.expires_after(seconds(server_.options.idle_seconds));
    idle_.async_wait([weak = this->weak_from_this()](beast::error_code ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->fail(kClosePolicy,
                 "no message for " + std::to_string(int64_t(self->server_.options.idle_seconds)) + " s (idle limit)",
                 "idle");
    });
  }
  void stop_idle() { idle_.cancel(); }
  bool closing() const { return closing_; }

  ServerContext& server_;
  websocket::stream<Stream> ws_;
  std::string message_;

 private:
  void read_piece() {
    const size_t max = size_t(server_.options.max_message_bytes);
    const size_t limit = std::min<size_t>(64 * 1024, max - std::min(max, message_.size()) + 1);
    ws_.async_read_some(buffer_, limit, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      self->on_piece(ec);
    });
  }

  void on_piece(beast::error_code ec) {
    reading_ = false;
    if (ec) return gone();
    const auto data = buffer_.data();
    message_.append(static_cast<const char*>(data.data()), data.size());
    buffer_.consume(buffer_.size());
    if (closing_) return;
    if (message_.size() > size_t(server_.options.max_message_bytes))
      return fail(kCloseTooBig,
                  "a message of more than " + std::to_string(server_.options.max_message_bytes) + " bytes (the limit)",
                  "message_size");
    if (!ws_.is_message_done()) {
      reading_ = true;
      return read_piece();
    }
    derived().on_message(ws_.got_text(), std::string_view(message_));
  }

  void write_next() {
    if (outbox_.empty()) {
      if (close_code_ && !close_sent_) {
        close_sent_ = true;
        ws_.async_close(*close_code_, [self = this->shared_from_this()](beast::error_code) {});
      }
      return;
    }
    writing_ = true;
    ws_.text(true);
    ws_.async_write(net::buffer(outbox_.front()), [self = this->shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->outbox_.pop_front();
      if (ec) return self->gone();
      self->write_next();
    });
  }

  // The client is gone or the connection broke: stop everything.
  void gone() {
    idle_.cancel();
    outbox_.clear();
    if (!closing_) {
      closing_ = true;
      derived().on_gone();
    }
  }

  ConnectionHold connection_;
  BusyHold busy_;
  Request upgrade_;
  net::steady_timer idle_;
  beast::flat_buffer buffer_;
  std::deque<std::string> outbox_;
  std::optional<websocket::close_reason> close_code_;
  bool reading_ = false, writing_ = false, closing_ = false, close_sent_ = false;
};

}  // namespace lt::server
