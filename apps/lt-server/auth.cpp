// Constant-time key checks over SHA-256 digests (auth.h).
#include "auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cctype>
#include <fstream>

#include "tool_error.h"

namespace lt::server {

namespace {
std::array<unsigned char, 32> digest(std::string_view s) {
  std::array<unsigned char, 32> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls f(item) for each comma-separated item.
template <class F>
void each_item(std::string_view list, F f) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    f(trim(list.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}
}  // namespace

Auth::Auth(const std::vector<std::string>& keys) {
  for (const std::string& k : keys) digests_.push_back(digest(k));
}

bool Auth::accepts(std::string_view candidate) const {
  if (digests_.empty()) return true;
  const std::array<unsigned char, 32> d = digest(candidate);
  int match = 0;
  for (const auto& k : digests_) match |= CRYPTO_memcmp(d.data(), k.data(), d.size()) == 0;  // every key, no early exit
  return match != 0 && !candidate.empty();
}

void read_api_keys(const std::string& path, std::vector<std::string>& keys) {
  std::ifstream in(path);
  lt::app::check(in.good(), path + ": cannot read the API keys");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t hash = line.find('#');
    std::string_view key = trim(std::string_view(line).substr(0, hash));
    if (!key.empty() && key.back() == '\r') key.remove_suffix(1);
    if (key.empty()) continue;
    for (unsigned char c : key)
      lt::app::check(c > 0x20 && c < 0x7f && c != ',',
                     path + ":" + std::to_string(number) + ": a key must be printable ASCII without spaces or commas");
    keys.emplace_back(key);
  }
  lt::app::check(!in.bad(), path + ": cannot read the API keys");
}

std::string bearer_token(std::string_view authorization) {
  authorization = trim(authorization);
  if (authorization.size() < 7) return "";
  std::string scheme(authorization.substr(0, 7));
  for (char& c : scheme) c = char(std::tolower(static_cast<unsigned char>(c)));
  return scheme == "bearer " ? std::string(trim(authorization.substr(7))) : "";
}

std::string subprotocol_key(std::string_view protocols) {
  std::string key;
  each_item(protocols, [&](std::string_view item) {
    if (key.empty() && item.substr(0, kKeySubprotocolPrefix.size()) == kKeySubprotocolPrefix)
      key = std::string(item.substr(kKeySubprotocolPrefix.size()));
  });
  return key;
}

bool offers_subprotocol(std::string_view protocols, std::string_view name) {
  bool found = false;
  each_item(protocols, [&](std::string_view item) { found = found || item == name; });
  return found;
}

}  // namespace lt::server
