#pragma once
// A migration compiled into the binary from migrations/<driver>/NNNN_name.sql; each driver's
// migrator holds its own, in version order (cmake/embed_migrations.cmake generates them).

#include <stdexcept>
#include <string_view>
#include <vector>

namespace autonous::db {

struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

// The database was written by a newer autonous than this one (either driver's migrate()).
class SchemaTooNewError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace autonous::db
