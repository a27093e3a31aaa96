#pragma once
// The PostgreSQL driver's stores, each on a caller's connection: the engine's storage
// (engine/engine_storage.h) and, for `autonous chat` and `autonous context limits`, the chat
// administration (engine/chat_settings_store.h) and the learned limits
// (engine/context_state_store.h); the worker reads a chat's state through its EngineStorage.
// All throw db::pg::PgError on database errors.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "internal/engine/chat_settings_store.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/engine_storage.h"

namespace autonous::db::pg {
class Connection;
}

namespace autonous::store {

// The engine's storage on `c`, which must outlive it. `pair_indexed`: the session's flag that
// its queue's completion indexed the turn's rows itself (PgSearchIndex::index_in_transaction).
std::unique_ptr<engine::EngineStorage> make_pg_storage(db::pg::Connection& c,
                                                       bool* pair_indexed = nullptr);

// As on SQLite (backend/sqlite/stores.h); load_pins returns every pin of the chat.
void save_overrides(db::pg::Connection& c, const std::string& chat_id,
                    const std::string& settings_json);
bool reset_overrides(db::pg::Connection& c, const std::string& chat_id);
int64_t clear_context(db::pg::Connection& c, const std::string& chat_id);
std::vector<engine::Pin> load_pins(db::pg::Connection& c, const std::string& chat_id);
int64_t add_pin(db::pg::Connection& c, const std::string& chat_id, const std::string& text);
bool remove_pin(db::pg::Connection& c, const std::string& chat_id, int64_t pin_id);

std::vector<engine::LearnedLimitRow> learned_limits(db::pg::Connection& c);
int64_t forget_limits(db::pg::Connection& c);

}  // namespace autonous::store
