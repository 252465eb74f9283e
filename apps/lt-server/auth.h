// --api-key: a request carries one of the server's keys as
//   Authorization: Bearer KEY                 (programs: curl, the OpenAI client)
//   Sec-WebSocket-Protocol: lt-key.KEY        (browsers, which cannot set headers on a WebSocket)
//   ?api_key=KEY                              (browsers, anywhere)
// Keys are compared in constant time: the candidate and every key are
// hashed (SHA-256) and all digests compared with CRYPTO_memcmp, so neither a
// key's bytes nor its length shows in the time an answer takes.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace lt::server {

constexpr std::string_view kKeySubprotocolPrefix = "lt-key.";

class Auth {
 public:
  explicit Auth(const std::vector<std::string>& keys);
  bool required() const { return !digests_.empty(); }
  // Whether candidate is one of the keys (always true when none is required).
  bool accepts(std::string_view candidate) const;

 private:
  std::vector<std::array<unsigned char, 32>> digests_;
};

// Appends the keys of a file, one a line (blank lines and '#' comments
// skipped); throws, naming the file and line, for one that has spaces,
// commas or bytes outside printable ASCII (keys travel in headers and
// subprotocol lists).
void read_api_keys(const std::string& path, std::vector<std::string>& keys);

// The key of an Authorization header's value "Bearer KEY", or "".
std::string bearer_token(std::string_view authorization);
// The key of a Sec-WebSocket-Protocol list "lt, lt-key.KEY", or "".
std::string subprotocol_key(std::string_view protocols);
// Whether the list offers protocol `name` ("lt").
bool offers_subprotocol(std::string_view protocols, std::string_view name);

}  // namespace lt::server
