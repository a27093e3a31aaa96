#include "internal/queue/lease_token.h"

#include <cstdint>
#include <random>

namespace autonous::queue {

std::string new_lease_token() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(32, '0');
  for (int half = 0; half < 2; ++half) {
    uint64_t v = rng();
    for (int i = 0; i < 16; ++i, v >>= 4) token[half * 16 + i] = kHex[v & 0xF];
  }
  return token;
}

}  // namespace autonous::queue
