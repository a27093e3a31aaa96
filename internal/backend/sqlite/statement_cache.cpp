#include "internal/backend/sqlite/statement_cache.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

namespace autonous::db {

StatementCache::StatementCache(SQLite::Database& db) : db_(db) {}
StatementCache::~StatementCache() = default;

CachedStatement::~CachedStatement() {
  s_.tryReset();  // noexcept; an error here was already reported by the step that caused it
}

CachedStatement StatementCache::get(const std::string& sql) {
  auto& slot = statements_[sql];
  if (!slot) {
    slot = std::make_unique<SQLite::Statement>(db_, sql);
  } else {
    slot->clearBindings();  // optional parameters left unbound must read as NULL
  }
  return CachedStatement(*slot);
}

}  // namespace autonous::db
