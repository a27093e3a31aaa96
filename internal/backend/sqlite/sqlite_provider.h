#pragma once
// SQLiteProvider: reads history rows through the (chat_id, id) index, so the cost depends on
// `limit`, not on the table's or the chat's size. Text comes back as stored (it may hold invalid
// UTF-8; the compressor repairs it). Not thread-safe: one per connection.

#include <memory>

#include "internal/engine/provider.h"

namespace SQLite {
class Database;
class Statement;
}  // namespace SQLite
namespace autonous::db {
class StatementCache;
}

namespace autonous::store {

class SQLiteProvider final : public engine::Provider {
 public:
  // `db` must outlive the provider.
  explicit SQLiteProvider(SQLite::Database& db);
  ~SQLiteProvider() override;
  std::vector<common::Message> get_history(const std::string& chat_id, int limit,
                                           int64_t after_id) override;
  std::vector<common::Message> read_history(const std::string& chat_id, int limit, int64_t after_id,
                                            std::string_view counter,
                                            std::vector<int64_t>& counts) override;
  engine::ChatState chat_state(const std::string& chat_id) override;
  void save_context_state(const std::string& chat_id, const engine::ContextState& state) override;

 private:
  SQLite::Database& db_;
  std::unique_ptr<db::StatementCache> cache_;  // both reads run on every turn
};

// Steps `q`, whose columns are history's (id, role, text[, created_at, tool_calls,
// tool_call_id]), into messages in row order. Text comes back byte for byte (a BLOB or text with
// NULs survives). With `counts`, a 7th column is a stored token count (NULL: -1) appended to it.
std::vector<common::Message> read_messages(SQLite::Statement& q,
                                           std::vector<int64_t>* counts = nullptr);

}  // namespace autonous::store
