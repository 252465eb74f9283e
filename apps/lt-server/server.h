// The server: an Asio io_context run by --io-threads threads (and the main
// one), a listening socket that hands each connection to an HttpSession on
// a strand of its own (TLS first when configured), the compute thread and
// the file worker, and the drain: on SIGTERM or SIGINT it stops accepting,
// lets live streams and requests finish (streams still open at
// --drain-seconds are ended and get their final results), then returns 0.
// A second signal stops at once.
#pragma once
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "server_context.h"
#include "transport.h"

namespace lt::server {

class Server {
 public:
  // Binds host:port (throws, one line, when it cannot) and prints
  // "lt-server: listening on http://HOST:PORT" on stderr.
  Server(const ServerOptions& options, Models& models);
  ~Server();
  // Serves until drained; the process's exit status.
  int run();

 private:
  void accept();
  void on_signal();
  void watch_drain();

  const ServerOptions& options_;
  Metrics metrics_;
  RateLimiter rate_;
  Slots connections_, streams_;
  Auth auth_;
  WebFiles web_;
  ComputeLoop compute_;
  FileTranscriber files_;
  ServerContext context_;
  // Declared last: destroyed first, with the sessions its handlers hold,
  // while what they refer to above still exists.
  net::io_context ioc_;
  std::optional<net::ssl::context> tls_;
  // The listening socket, the signals and the timers run their handlers on
  // one strand: a signal closes the acceptor on one I/O thread while an
  // accept completes on another, and an Asio object is not to be used from
  // two threads at once.
  net::strand<net::io_context::executor_type> strand_;
  tcp::acceptor acceptor_;
  net::signal_set signals_;
  net::steady_timer drain_timer_;
  std::chrono::steady_clock::time_point drain_deadline_{};
  bool streams_ended_ = false;
};

}  // namespace lt::server
