#pragma once
// The PostgreSQL side of `autonous copy` (backend/copy.h says what a copy does): writes a
// CopySource's tables into a migrated database.

#include <vector>

#include "internal/backend/copy.h"

namespace autonous::db::pg {
class Connection;
}

namespace autonous::backend {

// Copies every table of copied_tables() from `from` into `to` (migrated). Throws
// CopyNotVerified, or std::runtime_error (the target is in use, or naming the table and the row
// PostgreSQL refused); either way nothing is written.
std::vector<CopiedTable> copy_into(CopySource& from, db::pg::Connection& to);

}  // namespace autonous::backend
