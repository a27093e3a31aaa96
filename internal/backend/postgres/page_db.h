#pragma once
// The dashboard's reads (ops/page_db.h) on a PostgreSQL connection of their own.

#include <memory>

#include "internal/ops/page_db.h"

namespace autonous::db::pg {
class Connection;
}

namespace autonous::ops {

// The pages only read (SELECT); a statement past the deadline is cancelled; a connection found
// broken (a server restart, a failover) is connected again at the next call.
std::unique_ptr<PageDb> pg_page_db(std::unique_ptr<db::pg::Connection> c);

}  // namespace autonous::ops
