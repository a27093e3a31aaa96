#pragma once
// SQLiteSummaryStore: the context_summaries table (migration 0004), with its statements
// prepared once. Not thread-safe: one per connection.

#include <memory>

#include "internal/engine/summary.h"

namespace SQLite {
class Database;
}
namespace autonous::db {
class StatementCache;
}

namespace autonous::store {

class SQLiteSummaryStore final : public engine::SummaryStore {
 public:
  // `db` must outlive the store.
  explicit SQLiteSummaryStore(SQLite::Database& db);
  ~SQLiteSummaryStore() override;
  std::optional<engine::Summary> latest(const std::string& chat_id, int64_t chain_start) override;
  int64_t count_between(const std::string& chat_id, int64_t after_id, int64_t before_id) override;
  int64_t save(const std::string& chat_id, const engine::Summary& summary,
               const std::vector<std::optional<common::Usage>>& usage,
               int64_t messages_covered) override;

 private:
  SQLite::Database& db_;
  std::unique_ptr<db::StatementCache> cache_;  // latest() runs on every summarize turn
};

}  // namespace autonous::store
