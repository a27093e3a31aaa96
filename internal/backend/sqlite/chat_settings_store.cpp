// Chat settings, clear points and pins on SQLite (engine/chat_settings_store.h).
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/stores.h"

namespace autonous::store {

engine::ChatState load_chat_state(db::StatementCache& cache, const std::string& chat_id) {
  auto q = cache.get("SELECT settings, cleared_through FROM chat_settings WHERE chat_id = ?");
  q->bind(1, chat_id);
  engine::ChatState out;
  if (q->executeStep()) {
    out.settings_json = q->getColumn(0).getString();
    out.cleared_through = q->getColumn(1).getInt64();
  }
  return out;
}

void save_overrides(SQLite::Database& db, const std::string& chat_id,
                    const std::string& settings_json) {
  SQLite::Statement q(db,
                      "INSERT INTO chat_settings(chat_id, settings) VALUES (?, ?) "
                      "ON CONFLICT(chat_id) DO UPDATE SET settings = excluded.settings, "
                      "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
  q.bind(1, chat_id);
  q.bind(2, settings_json);
  q.exec();
}

bool reset_overrides(SQLite::Database& db, const std::string& chat_id) {
  SQLite::Statement q(db,
                      "UPDATE chat_settings SET settings = '{}', "
                      "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
                      "WHERE chat_id = ? AND settings <> '{}'");
  q.bind(1, chat_id);
  return q.exec() > 0;
}

int64_t clear_context(SQLite::Database& db, const std::string& chat_id) {
  // The newest id is read and stored in one statement; the engine's state starts over with it.
  // The caller holds the write transaction.
  SQLite::Statement q(
      db,
      "INSERT INTO chat_settings(chat_id, cleared_through, cleared_at) "
      "VALUES (?1, coalesce((SELECT max(id) FROM history WHERE chat_id = ?1), 0), "
      "        strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
      "ON CONFLICT(chat_id) DO UPDATE SET cleared_through = excluded.cleared_through, "
      "cleared_at = excluded.cleared_at, updated_at = excluded.cleared_at "
      "RETURNING cleared_through");
  q.bind(1, chat_id);
  q.executeStep();
  const int64_t through = q.getColumn(0).getInt64();
  q.reset();
  SQLite::Statement state(db, "DELETE FROM context_state WHERE chat_id = ?");
  state.bind(1, chat_id);
  state.exec();
  return through;
}

std::vector<engine::Pin> load_pins(db::StatementCache& cache, const std::string& chat_id,
                                   std::optional<int64_t> newest) {
  auto q = cache.get(
      "SELECT id, text, created_at FROM (SELECT id, text, created_at FROM chat_pins WHERE chat_id "
      "= ? ORDER BY id DESC LIMIT ?) ORDER BY id");
  q->bind(1, chat_id);
  q->bind(2, newest.value_or(-1));  // LIMIT -1: all
  std::vector<engine::Pin> out;
  while (q->executeStep())
    out.push_back(
        {q->getColumn(0).getInt64(), q->getColumn(1).getString(), q->getColumn(2).getString()});
  return out;
}

std::vector<engine::CustomBlock> load_custom_blocks(db::StatementCache& cache,
                                                    const std::string& chat_id) {
  auto q = cache.get(
      "SELECT id, name, text FROM custom_blocks WHERE chat_id = ? OR chat_id IS NULL ORDER BY "
      "chat_id IS NULL, id LIMIT ?");
  q->bind(1, chat_id);
  q->bind(2, static_cast<int64_t>(engine::kMaxCustomBlocks));
  std::vector<engine::CustomBlock> out;
  while (q->executeStep())
    out.push_back(
        {q->getColumn(0).getInt64(), q->getColumn(1).getString(), q->getColumn(2).getString()});
  return out;
}

int64_t add_pin(SQLite::Database& db, const std::string& chat_id, const std::string& text) {
  SQLite::Statement q(db, "INSERT INTO chat_pins(chat_id, text) VALUES (?, ?)");
  q.bind(1, chat_id);
  q.bind(2, text);
  q.exec();
  return db.getLastInsertRowid();
}

bool remove_pin(SQLite::Database& db, const std::string& chat_id, int64_t pin_id) {
  SQLite::Statement q(db, "DELETE FROM chat_pins WHERE chat_id = ? AND id = ?");
  q.bind(1, chat_id);
  q.bind(2, pin_id);
  return q.exec() > 0;
}

}  // namespace autonous::store
