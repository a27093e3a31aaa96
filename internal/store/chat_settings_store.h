#pragma once
// The chat_settings table: a chat's own context settings and its clear point. Writers validate
// before they call save_overrides(); readers validate again (a row may be written by hand).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/context/provider.h"

namespace SQLite {
class Database;
}
namespace autonous::db {
class StatementCache;
namespace pg {
class Connection;
}
}  // namespace autonous::db

namespace autonous::store {

// The stored state of `chat_id`; defaults when it has no row. Every turn reads it: through the
// connection's statement cache.
context::ChatState load_chat_state(db::StatementCache& cache, const std::string& chat_id);

// Replaces the chat's overrides with `settings_json` (a JSON object), keeping its clear point.
void save_overrides(SQLite::Database& db, const std::string& chat_id,
                    const std::string& settings_json);

// Back to the environment's defaults (the clear point stays). Returns false when the chat had
// no overrides.
bool reset_overrides(SQLite::Database& db, const std::string& chat_id);

// Starts the chat's context fresh after its newest stored history row (its context_state goes
// too); the rows stay for audit. Returns the new clear point (0 when the chat has no history).
// Run it inside the caller's write transaction.
int64_t clear_context(SQLite::Database& db, const std::string& chat_id);

// A chat's pinned facts (chat_pins), oldest first: what `chat show` lists and every prompt of
// the chat carries. `chat clear` keeps them.
struct Pin {
  int64_t id = 0;
  std::string text;
  std::string created_at;
};
// The chat's own custom blocks, then every chat's (custom_blocks), each oldest first, the first
// context::kMaxCustomBlocks.
std::vector<context::CustomBlock> load_custom_blocks(db::StatementCache& cache,
                                                     const std::string& chat_id);

// The chat's pins, oldest first; with `newest`, only that many of the newest.
std::vector<Pin> load_pins(db::StatementCache& cache, const std::string& chat_id,
                           std::optional<int64_t> newest = std::nullopt);
// Pins `text` (valid UTF-8, not blank) to the chat; returns its id.
int64_t add_pin(SQLite::Database& db, const std::string& chat_id, const std::string& text);
// Removes pin `pin_id` of the chat; false when the chat has no such pin.
bool remove_pin(SQLite::Database& db, const std::string& chat_id, int64_t pin_id);

// The same on PostgreSQL (pg_chat_settings_store.cpp), for `autonous chat`; the worker reads
// a chat's state through its EngineStorage. load_pins returns every pin of the chat.
void save_overrides(db::pg::Connection& c, const std::string& chat_id,
                    const std::string& settings_json);
bool reset_overrides(db::pg::Connection& c, const std::string& chat_id);
int64_t clear_context(db::pg::Connection& c, const std::string& chat_id);
std::vector<Pin> load_pins(db::pg::Connection& c, const std::string& chat_id);
int64_t add_pin(db::pg::Connection& c, const std::string& chat_id, const std::string& text);
bool remove_pin(db::pg::Connection& c, const std::string& chat_id, int64_t pin_id);

}  // namespace autonous::store
