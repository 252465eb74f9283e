// The two kinds of connection lt-server speaks over: plain TCP, or TLS
// (OpenSSL through Beast's ssl_stream) when --tls-cert and --tls-key are
// given. The sessions are templates over these and are instantiated for
// both in their .cpp files.
#pragma once
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <string_view>

namespace lt::server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

template <class Stream>
constexpr bool kIsTls = std::is_same_v<Stream, TlsStream>;

// Beast's string_view (Boost's, in Boost 1.74) as the standard one.
inline std::string_view sv(beast::string_view s) { return std::string_view(s.data(), s.size()); }

// Seconds as Beast's timers take them.
inline std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace lt::server
