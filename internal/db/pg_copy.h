#pragma once
// copy_to_postgres: moves a SQLite deployment's data into a migrated PostgreSQL database with
// the same tables (`autonous copy`). Every table's rows, ids kept, in one SQLite read snapshot
// and one PostgreSQL transaction; a row already there (the same key) is left alone, so a second
// run copies nothing twice and picks up what a first run did not commit. Identity sequences
// continue after the copied ids. chat_heads is rebuilt by the triggers as the tasks arrive; the
// search index's rows, counts and queue are copied as they are (nothing is indexed twice).
// Verified by counts: each table must hold at least the source's rows afterwards.

#include <cstdint>
#include <string>
#include <vector>

namespace SQLite {
class Database;
}

namespace autonous::db {
namespace pg {
class Connection;
}

struct CopiedTable {
  std::string table;
  int64_t source_rows = 0;  // in the SQLite file
  int64_t inserted = 0;     // new in PostgreSQL (0 on a re-run)
  int64_t target_rows = 0;  // in PostgreSQL afterwards
};

// The tables copied, in the order they are copied (referenced tables first).
const std::vector<std::string>& copied_tables();

// Copies every table of copied_tables() from `from` (a SQLite database at the current schema
// version) into `to` (migrated). Throws pg::PgError or SQLite::Exception on a row PostgreSQL
// refuses (the whole copy is rolled back), std::runtime_error when the schemas differ.
std::vector<CopiedTable> copy_to_postgres(SQLite::Database& from, pg::Connection& to);

}  // namespace autonous::db
