#include "internal/common/sha256.h"

#include <array>
#include <stdexcept>

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace autonous::common {

namespace {

std::string hex_digest(const unsigned char* digest, unsigned int size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed");
  return hex_digest(digest.data(), size);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data(),
           &size) == nullptr)
    throw std::runtime_error("HMAC-SHA256 failed");
  return hex_digest(digest.data(), size);
}

}  // namespace autonous::common
