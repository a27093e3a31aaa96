#include "internal/db/write_gate.h"

namespace autonous::db {

std::mutex& write_gate() noexcept {
  static std::mutex gate;
  return gate;
}

}  // namespace autonous::db
