#pragma once
// The migrations compiled into the binary from migrations/NNNN_name.sql, in version order.

#include <string_view>
#include <vector>

namespace autonous::db {

struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

// Defined in the generated embedded_migrations.cpp.
const std::vector<Migration>& embedded_migrations();

}  // namespace autonous::db
