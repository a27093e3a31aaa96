#pragma once
// SHA-256 of a byte string, and HMAC-SHA256 of one under a key, as 64 lower-case hex digits
// (OpenSSL). Thread-safe.

#include <string>
#include <string_view>

namespace autonous::common {

std::string sha256_hex(std::string_view bytes);
std::string hmac_sha256_hex(std::string_view key, std::string_view bytes);

}  // namespace autonous::common
