#pragma once
// SHA-256 of a byte string, as 64 lower-case hex digits (OpenSSL's EVP digest). Thread-safe.

#include <string>
#include <string_view>

namespace autonous::common {

std::string sha256_hex(std::string_view bytes);

}  // namespace autonous::common
