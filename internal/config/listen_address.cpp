#include "internal/config/listen_address.h"

#include <cctype>
#include <charconv>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "internal/config/config.h"

namespace autonous::config {
namespace {

int parse_port(const std::string& text) {
  int port = -1;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || port < 0 ||
      port > 65535)
    throw std::invalid_argument("'" + text + "' is not a port from 0 to 65535");
  return port;
}

// Decided on the address, not the text: "127.example.com" is a name that may resolve anywhere.
bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace

std::string ListenAddress::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ListenAddress parse_listen_address(const std::string& text) {
  ListenAddress out;
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    out.port = parse_port(text);
    return out;
  }
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string::npos)
    throw std::invalid_argument("'" + text + "': write an IPv6 host in brackets, e.g. [::1]:9464");
  if (host.empty())
    throw std::invalid_argument("'" + text +
                                "' has no host; write 127.0.0.1:PORT, or 0.0.0.0:PORT for every "
                                "interface");
  for (const char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':'))
      throw std::invalid_argument("'" + text + "' has a bad host");
  out.host = host;
  out.port = parse_port(text.substr(colon + 1));
  out.loopback = is_loopback(host);
  return out;
}

void check_listen_token(const ListenAddress& address, const std::string& token) {
  for (const char c : token)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      throw ConfigError("HTTP_TOKEN", "must not contain spaces or control characters");
  if (!address.loopback && token.empty())
    throw ConfigError("HTTP_TOKEN", "is required when the dashboard listens on " +
                                        address.to_string() +
                                        ", a non-loopback address (clients send it as "
                                        "'Authorization: Bearer TOKEN')");
}

}  // namespace autonous::config
