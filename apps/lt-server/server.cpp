// Accepting, signals and the drain (server.h).
#include "server.h"

#include <cstdio>
#include <iostream>

#include "http_session.h"
#include "tool_error.h"

namespace lt::server {

namespace {
constexpr auto kDrainPoll = std::chrono::milliseconds(50);
constexpr double kAfterDrainSeconds = 5;  // ended streams' final results and image streams, at most
}  // namespace

Server::Server(const ServerOptions& options, Models& models)
    : options_(options),
      rate_(options.requests_per_second),
      connections_(options.max_connections),
      streams_(options.max_streams),
      auth_(options.api_keys),
      web_(options.web),
      compute_(models.stream.get(), models.image.get(), std::chrono::milliseconds(options.step_interval_ms), metrics_),
      files_(models.offline.get(), metrics_),
      context_{options, models, compute_, files_, metrics_, rate_, connections_, streams_, auth_, web_},
      strand_(net::make_strand(ioc_)),
      acceptor_(strand_),
      signals_(strand_, SIGINT, SIGTERM),
      drain_timer_(strand_) {
  lt::app::check(options.tls_cert.empty() == options.tls_key.empty(), "--tls-cert and --tls-key go together");
  if (!options.tls_cert.empty()) {
    tls_.emplace(net::ssl::context::tls_server);
    tls_->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                      net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
    beast::error_code ec;
    tls_->use_certificate_chain_file(options.tls_cert, ec);
    lt::app::check(!ec, options.tls_cert + ": cannot use as a TLS certificate chain (PEM): " + ec.message());
    tls_->use_private_key_file(options.tls_key, net::ssl::context::pem, ec);
    lt::app::check(!ec, options.tls_key + ": cannot use as the certificate's private key (PEM): " + ec.message());
  }
  const std::string where = options.host + ":" + std::to_string(options.port);
  beast::error_code ec;
  tcp::resolver resolver(ioc_);
  const auto endpoints = resolver.resolve(options.host, std::to_string(options.port),
                                          tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  lt::app::check(!ec && !endpoints.empty(), "cannot listen on " + where + ": " + (ec ? ec.message() : "no address"));
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  lt::app::check(!ec, "cannot listen on " + where + ": " + ec.message());
  const tcp::endpoint bound = acceptor_.local_endpoint();
  const std::string address = bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
  std::fprintf(stderr, "lt-server: listening on %s://%s:%u\n", tls_ ? "https" : "http", address.c_str(),
               unsigned(bound.port()));
  std::fflush(stderr);
}

Server::~Server() = default;

void Server::accept() {
  acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor_.is_open()) return;  // draining
    if (ec) {
      // Out of descriptors, say: try again shortly rather than spin.
      std::fprintf(stderr, "lt-server: accept failed: %s\n", ec.message().c_str());
      auto retry = std::make_shared<net::steady_timer>(strand_, std::chrono::milliseconds(100));
      retry->async_wait([this, retry](beast::error_code) { accept(); });
      return;
    }
    // Replies are small and each answers a frame: send them at once (no Nagle).
    beast::error_code nodelay_ec;
    socket.set_option(tcp::no_delay(true), nodelay_ec);
    beast::error_code peer_ec;
    const auto peer = socket.remote_endpoint(peer_ec);
    const std::string client = peer_ec ? "unknown" : peer.address().to_string();
    metrics_.connections_total.fetch_add(1);
    const bool over = !connections_.try_take();
    ConnectionHold hold(metrics_, over ? nullptr : &connections_);
    if (tls_)
      std::make_shared<HttpSession<TlsStream>>(context_, TlsStream(std::move(socket), *tls_), client, std::move(hold), over)
          ->run();
    else
      std::make_shared<HttpSession<PlainStream>>(context_, PlainStream(std::move(socket)), client, std::move(hold), over)
          ->run();
    accept();
  });
}

void Server::on_signal() {
  if (context_.draining.load()) {
    std::fprintf(stderr, "lt-server: second signal: stopping now\n");
    ioc_.stop();
    return;
  }
  context_.draining.store(true);
  beast::error_code ec;
  acceptor_.close(ec);
  std::fprintf(stderr, "lt-server: draining: %lld live streams may finish within %.0f s\n",
               (long long)metrics_.live_streams.load(), options_.drain_seconds);
  drain_deadline_ = std::chrono::steady_clock::now() + seconds(options_.drain_seconds);
  signals_.async_wait([this](beast::error_code e, int) {
    if (!e) on_signal();
  });
  watch_drain();
}

void Server::watch_drain() {
  drain_timer_.expires_after(kDrainPoll);
  drain_timer_.async_wait([this](beast::error_code ec) {
    if (ec) return;
    const auto now = std::chrono::steady_clock::now();
    if (context_.busy.load() == 0) {
      std::fprintf(stderr, "lt-server: drained\n");
      ioc_.stop();
      return;
    }
    if (!streams_ended_ && now >= drain_deadline_) {
      std::fprintf(stderr, "lt-server: drain time is up: ending %lld live streams with their final results\n",
                   (long long)metrics_.live_streams.load());
      compute_.end_all_streams();
      streams_ended_ = true;
      drain_deadline_ = now + seconds(kAfterDrainSeconds);
    } else if (streams_ended_ && now >= drain_deadline_) {
      std::fprintf(stderr, "lt-server: stopping with %lld requests or sessions still open\n",
                   (long long)context_.busy.load());
      ioc_.stop();
      return;
    }
    watch_drain();
  });
}

int Server::run() {
  signals_.async_wait([this](beast::error_code ec, int) {
    if (!ec) on_signal();
  });
  accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < options_.io_threads; ++i) threads.emplace_back([this] { ioc_.run(); });
  ioc_.run();
  for (std::thread& t : threads) t.join();
  // No callback may post to the io_context once it is destroyed.
  compute_.stop();
  files_.stop();
  return 0;
}

}  // namespace lt::server
