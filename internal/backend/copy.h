#pragma once
// `autonous copy`: moves a SQLite deployment's data into a PostgreSQL database with the same
// tables. Every table's rows, ids kept, in one read snapshot of the source and one PostgreSQL
// transaction; a row whose key is there already takes the source's values, so a second run
// changes only what changed since. The target must be empty, or untouched since the last copy
// (its identity sequences where that copy left them, noted in a comment on `tasks`): otherwise
// the copy is refused, since a source row would overwrite a row written there. Identity
// sequences continue after every id the source gave out. chat_heads is rebuilt by the triggers
// as the tasks arrive; the search index's rows, counts and queue are copied as they are (nothing
// is indexed twice). References to rows the source no longer has are copied as NULL. Verified by
// counts before the commit: every table must hold exactly the source's rows, else nothing is
// written (CopyNotVerified).
//
// The source side is a CopySource (the SQLite driver reads its file); the target side is the
// PostgreSQL driver's copy_into (backend/postgres/copy.h). copy_deployment joins them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace autonous::config {
struct Config;
}

namespace autonous::backend {

struct CopiedTable {
  std::string table;
  int64_t source_rows = 0;  // in the source
  int64_t inserted = 0;     // rows written (inserted, or updated to the source's values)
  int64_t target_rows = 0;  // in the target afterwards
  int64_t normalised = 0;   // rows read as the SQLite worker reads them (CopySource::normalised)
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

// The source cannot be copied from (not readable, or not at this binary's schema version); the
// message says why and what to do.
class SourceRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No target was given, or it is not a PostgreSQL URL; the message says what to give.
class TargetRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A deployment's database as a copy reads it, inside one read snapshot (begin() to end()).
class CopySource {
 public:
  struct Column {
    std::string name;
    bool key = false;  // part of the row's key in the target (ON CONFLICT)
  };
  // A cell as stored: its text or blob bytes; nullopt for NULL.
  using Cell = std::optional<std::string>;
  using Row = std::function<void(const std::vector<Cell>&)>;

  virtual ~CopySource() = default;
  virtual void begin() = 0;
  virtual void end() noexcept = 0;
  // The columns of `table` as the target has them. Throws when the source has no such table.
  virtual std::vector<Column> columns(const std::string& table) = 0;
  virtual int64_t count(const std::string& table) = 0;
  // Rows of `table` with a value the target's column cannot hold as stored, copied as the
  // SQLite worker reads it: a task's text or real number as CAST AS INTEGER gives it, a
  // priority outside 32 bits at the bound.
  virtual int64_t normalised(const std::string& table) = 0;
  // Each row of `table` (`columns` in that order), in key order where the first column is `id`
  // or the key; a reference to a row the source no longer has reads as NULL.
  virtual void rows(const std::string& table, const std::vector<Column>& columns,
                    const Row& each) = 0;
  // The highest id `table` gave out: its rows', and ids its counter passed (deleted newest rows).
  virtual int64_t highest_id(const std::string& table) = 0;
  // The highest task id the source's events and history still name.
  virtual int64_t highest_task_reference() = 0;
};

// Copies the SQLite file `from` (opened read-only, with its -wal; SQLITE_BUSY_TIMEOUT_MS for its
// locks) into the PostgreSQL database at `to_url` (empty: the configured DATABASE_URL), migrated
// first. Throws TargetRefused (no target, or not a postgresql:// URL), SourceRefused (a source
// that cannot be read or is not at this binary's schema version), CopyNotVerified, or
// std::runtime_error (the target is in use, or naming the table and the row the target
// refused); either way nothing is written. Returns the target as it may be shown (redacted).
struct CopyResult {
  std::vector<CopiedTable> tables;
  std::string target;  // the URL, password redacted
};
CopyResult copy_deployment(const config::Config& config, const std::string& from,
                           const std::string& to_url);

}  // namespace autonous::backend
