#include "internal/backend/sqlite/sqlite_provider.h"

#include <algorithm>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/engine/chat_settings_store.h"
#include "internal/engine/context_state_store.h"

namespace autonous::store {

SQLiteProvider::SQLiteProvider(SQLite::Database& db)
    : db_(db), cache_(std::make_unique<db::StatementCache>(db)) {}

SQLiteProvider::~SQLiteProvider() = default;

std::vector<common::Message> SQLiteProvider::get_history(const std::string& chat_id, int limit,
                                                         int64_t after_id) {
  std::vector<int64_t> counts;
  return read_history(chat_id, limit, after_id, {}, counts);
}

std::vector<common::Message> SQLiteProvider::read_history(const std::string& chat_id, int limit,
                                                          int64_t after_id,
                                                          std::string_view counter,
                                                          std::vector<int64_t>& counts) {
  counts.clear();
  if (limit <= 0) return {};
  // Newest first through the (chat_id, id) index, then reversed: a seek plus `limit` steps.
  auto q = cache_->get(
      "SELECT id, role, text, created_at, tool_calls, tool_call_id, CASE WHEN token_counter = ? "
      "THEN token_count END FROM history INDEXED BY history_by_chat WHERE chat_id = ? AND id > ? "
      "ORDER BY id DESC LIMIT ?");
  q->bind(1, std::string(counter));
  q->bind(2, chat_id);
  q->bind(3, after_id);
  q->bind(4, limit);
  std::vector<common::Message> out = read_messages(*q, &counts);
  std::reverse(out.begin(), out.end());
  std::reverse(counts.begin(), counts.end());
  return out;
}

std::vector<common::Message> read_messages(SQLite::Statement& q, std::vector<int64_t>* counts) {
  std::vector<common::Message> out;
  while (q.executeStep()) {
    if (counts != nullptr) {  // the 7th column: the stored count, NULL when none
      const SQLite::Column n = q.getColumn(6);
      counts->push_back(n.isNull() ? -1 : n.getInt64());
    }
    common::Message m;
    m.history_id = q.getColumn(0).getInt64();
    m.role = common::parse_role(q.getColumn(1).getString()).value_or(common::Role::kUser);
    const SQLite::Column text = q.getColumn(2);
    // sqlite3_column_blob before sqlite3_column_bytes, as SQLite's documentation asks.
    const auto* bytes = static_cast<const char*>(text.getBlob());
    const auto size = static_cast<size_t>(text.getBytes());
    if (bytes != nullptr) m.content.assign(bytes, size);
    if (q.getColumnCount() > 3) m.at = q.getColumn(3).getString();
    if (q.getColumnCount() > 5) {  // tool_calls, tool_call_id ("" for NULL)
      m.tool_calls = q.getColumn(4).getString();
      m.tool_call_id = q.getColumn(5).getString();
    }
    out.push_back(std::move(m));
  }
  return out;
}

engine::ChatState SQLiteProvider::chat_state(const std::string& chat_id) {
  engine::ChatState out = load_chat_state(*cache_, chat_id);
  out.context = load_context_state(*cache_, chat_id);
  for (engine::Pin& pin : load_pins(*cache_, chat_id, static_cast<int64_t>(engine::kMaxPins)))
    out.pins.push_back(std::move(pin.text));
  out.blocks = load_blocks(*cache_, chat_id);
  out.custom = load_custom_blocks(*cache_, chat_id);
  return out;
}

void SQLiteProvider::save_context_state(const std::string& chat_id,
                                        const engine::ContextState& state) {
  store::save_context_state(db_, chat_id, state);
}

}  // namespace autonous::store
