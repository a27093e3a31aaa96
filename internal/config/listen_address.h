#pragma once
// ListenAddress: where the operator surface (HTTP_LISTEN, `autonous dashboard --listen`) binds:
// "HOST:PORT", "[IPV6]:PORT" or a bare "PORT" (loopback). A non-loopback address needs a bearer
// token (HTTP_TOKEN); check_listen_token refuses one without it.

#include <string>

namespace autonous::config {

struct ListenAddress {
  std::string host = "127.0.0.1";  // numeric or a name; IPv6 without brackets
  int port = 9464;
  bool loopback = true;  // 127.0.0.0/8, ::1 or localhost

  std::string to_string() const;  // "127.0.0.1:9464", "[::1]:9464"
};

// Throws std::invalid_argument saying what is wrong with `text`.
ListenAddress parse_listen_address(const std::string& text);

// Throws ConfigError("HTTP_TOKEN") when `address` is not loopback and `token` is empty, or when
// the token has whitespace or control characters (it travels in a header).
void check_listen_token(const ListenAddress& address, const std::string& token);

}  // namespace autonous::config
