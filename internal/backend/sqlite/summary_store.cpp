#include "internal/backend/sqlite/summary_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>

#include "internal/backend/sqlite/sqlite_provider.h"
#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::store {

SQLiteSummaryStore::SQLiteSummaryStore(SQLite::Database& db)
    : db_(db), cache_(std::make_unique<db::StatementCache>(db)) {}

SQLiteSummaryStore::~SQLiteSummaryStore() = default;

std::optional<engine::Summary> SQLiteSummaryStore::latest(const std::string& chat_id,
                                                          int64_t chain_start) {
  auto q = cache_->get(
      "SELECT id, covers_through, text, tokens, model FROM context_summaries "
      "WHERE chat_id = ? AND chain_start = ? ORDER BY id DESC LIMIT 1");
  q->bind(1, chat_id);
  q->bind(2, chain_start);
  if (!q->executeStep()) return std::nullopt;
  engine::Summary s;
  s.id = q->getColumn(0).getInt64();
  s.covers_through = q->getColumn(1).getInt64();
  s.chain_start = chain_start;
  s.text = q->getColumn(2).getString();
  s.tokens = q->getColumn(3).getInt64();
  s.model = q->getColumn(4).getString();
  return s;
}

int64_t SQLiteSummaryStore::count_between(const std::string& chat_id, int64_t after_id,
                                          int64_t before_id) {
  auto q = cache_->get(
      "SELECT count(*) FROM history INDEXED BY history_by_chat "
      "WHERE chat_id = ? AND id > ? AND id < ?");
  q->bind(1, chat_id);
  q->bind(2, after_id);
  q->bind(3, before_id);
  q->executeStep();
  const int64_t n = q->getColumn(0).getInt64();
  q->reset();
  return n;
}

int64_t SQLiteSummaryStore::save(const std::string& chat_id, const engine::Summary& summary,
                                 const std::vector<std::optional<common::Usage>>& usage,
                                 int64_t messages_covered) {
  db::WriteTransaction tx(db_);
  SQLite::Statement q(db_,
                      "INSERT INTO context_summaries(chat_id, chain_start, covers_through, "
                      "previous_id, messages_covered, text, tokens, model, usage) "
                      "VALUES (?, ?, ?, (SELECT max(id) FROM context_summaries WHERE chat_id = ?1 "
                      "AND chain_start = ?2), ?, ?, ?, ?, ?)");
  q.bind(1, chat_id);
  q.bind(2, summary.chain_start);
  q.bind(3, summary.covers_through);
  q.bind(4, messages_covered);
  q.bind(5, summary.text);
  q.bind(6, summary.tokens);
  q.bind(7, summary.model);
  nlohmann::json calls = nlohmann::json::array();
  for (const auto& u : usage) calls.push_back(u ? nlohmann::json(*u) : nlohmann::json(nullptr));
  q.bind(8, calls.dump());
  q.exec();
  const int64_t id = db_.getLastInsertRowid();
  tx.commit();
  return id;
}

}  // namespace autonous::store
