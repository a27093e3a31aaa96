#pragma once
// The SQLite driver's stores, each on a caller's connection: the engine's storage
// (engine/engine_storage.h), the chat administration (settings, clear points, pins:
// engine/chat_settings_store.h), the engine's stored memory and learned limits
// (engine/context_state_store.h) and the estimator's calibration (engine/calibration_store.h).
// Functions that take a StatementCache are the worker's hot reads. All throw SQLite::Exception
// on database errors.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "internal/engine/chat_settings_store.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/engine_storage.h"
#include "internal/engine/provider.h"

namespace SQLite {
class Database;
}
namespace autonous::db {
class StatementCache;
}

namespace autonous::store {

// The engine's storage on `db`, which must outlive it.
std::unique_ptr<engine::EngineStorage> make_sqlite_storage(SQLite::Database& db);

// --- chat administration (chat_settings, chat_pins, custom_blocks) ---

// The stored state of `chat_id`; defaults when it has no row.
engine::ChatState load_chat_state(db::StatementCache& cache, const std::string& chat_id);
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
// The chat's own custom blocks, then every chat's (custom_blocks), each oldest first, the first
// engine::kMaxCustomBlocks.
std::vector<engine::CustomBlock> load_custom_blocks(db::StatementCache& cache,
                                                    const std::string& chat_id);
// The chat's pins, oldest first; with `newest`, only that many of the newest.
std::vector<engine::Pin> load_pins(db::StatementCache& cache, const std::string& chat_id,
                                   std::optional<int64_t> newest = std::nullopt);
// Pins `text` (valid UTF-8, not blank) to the chat; returns its id.
int64_t add_pin(SQLite::Database& db, const std::string& chat_id, const std::string& text);
// Removes pin `pin_id` of the chat; false when the chat has no such pin.
bool remove_pin(SQLite::Database& db, const std::string& chat_id, int64_t pin_id);

// --- the engine's stored memory (context_state, context_blocks, learned_limits) ---

// The chat's context state; defaults when it has none.
engine::ContextState load_context_state(db::StatementCache& cache, const std::string& chat_id);
// Stores the chat's context state (one write transaction).
void save_context_state(SQLite::Database& db, const std::string& chat_id,
                        const engine::ContextState& state);
// The same inside the caller's write transaction.
void write_context_state(SQLite::Database& db, const std::string& chat_id,
                         const engine::ContextState& state);
// The stable blocks of the chat's last answered prompt (context_blocks), and replacing them
// (inside the caller's transaction: the turn's completion).
std::vector<engine::BlockRecord> load_blocks(db::StatementCache& cache, const std::string& chat_id);
void write_blocks(SQLite::Database& db, const std::string& chat_id,
                  const std::vector<engine::BlockRecord>& blocks);
// The limit learned for (`endpoint`, `model`), if any.
std::optional<engine::LearnedLimit> learned_limit(SQLite::Database& db, const std::string& endpoint,
                                                  const std::string& model);
// Records `limit` for (`endpoint`, `model`). A limit the server stated replaces what was stored
// (the server said so); one guessed without a stated window never raises a smaller one.
// Returns the budget now stored.
int64_t learn_limit(SQLite::Database& db, const std::string& endpoint, const std::string& model,
                    const engine::LearnedLimit& limit);
// Every learned limit (`autonous context limits`), and forgetting them all (`--clear`: after a
// server's window changed: the largest prompt taken whole, token_calibration.proven_raw, is
// forgotten too); forget_limits returns how many learned limits were deleted.
std::vector<engine::LearnedLimitRow> learned_limits(SQLite::Database& db);
int64_t forget_limits(SQLite::Database& db);

// --- calibration (token_calibration) ---

// The stored calibration of (endpoint, model), else of ('', model), else none.
engine::Calibration calibration(SQLite::Database& db, const std::string& endpoint,
                                const std::string& model);
// Stores engine::calibration_after(lesson) for (endpoint, model). Returns the calibration now
// stored.
engine::Calibration calibrate(SQLite::Database& db, const std::string& endpoint,
                              const std::string& model, const engine::CalibrationLesson& lesson);

}  // namespace autonous::store
