#pragma once
// The dashboard's reads (ops/page_db.h) on a SQLite connection of their own.

#include <memory>

#include "internal/ops/page_db.h"

namespace SQLite {
class Database;
}

namespace autonous::ops {

// `db` should have a short busy timeout (a probe waits on it). A query past the request's
// deadline is interrupted (SQLite's progress handler).
std::unique_ptr<PageDb> sqlite_page_db(std::unique_ptr<SQLite::Database> db);

}  // namespace autonous::ops
