#pragma once
// copy_to_postgres: moves a SQLite deployment's data into a migrated PostgreSQL database with
// the same tables (`autonous copy`). Every table's rows, ids kept, in one SQLite read snapshot
// and one PostgreSQL transaction; a row whose key is there already takes the source's values, so
// a second run changes only what changed since. The target must be empty, or untouched since the
// last copy (its identity sequences where that copy left them, noted in a comment on `tasks`):
// otherwise the copy is refused, since a source row would overwrite a row written there. Identity
// sequences continue after every id the source gave out. chat_heads is rebuilt by the triggers as
// the tasks arrive; the search index's rows, counts and queue are copied as they are (nothing is
// indexed twice). References to rows the source no longer has are copied as NULL. Verified by
// counts before the commit: every table must hold exactly the source's rows, else nothing is
// written (CopyNotVerified).

#include <cstdint>
#include <stdexcept>
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
  int64_t inserted = 0;     // rows written (inserted, or updated to the source's values)
  int64_t target_rows = 0;  // in PostgreSQL afterwards
};

// The tables copied, in the order they are copied (referenced tables first).
const std::vector<std::string>& copied_tables();

// The counts did not match (the target holds rows the source does not): nothing was written.
class CopyNotVerified : public std::runtime_error {
 public:
  explicit CopyNotVerified(std::vector<CopiedTable> tables)
      : std::runtime_error("copy not verified: the target holds other rows than the source"),
        tables_(std::move(tables)) {}
  const std::vector<CopiedTable>& tables() const noexcept { return tables_; }

 private:
  std::vector<CopiedTable> tables_;
};

// Copies every table of copied_tables() from `from` (a SQLite database at the current schema
// version, opened for reading) into `to` (migrated). Throws CopyNotVerified, or
// std::runtime_error (the target is in use, or naming the table and the row PostgreSQL refused);
// either way nothing is written.
std::vector<CopiedTable> copy_to_postgres(SQLite::Database& from, pg::Connection& to);

}  // namespace autonous::db
