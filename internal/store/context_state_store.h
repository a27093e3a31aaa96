#pragma once
// The context engine's stored memory (migration 0006): context_state, a chat's verbatim start
// and summarize back-off, written at compactions only; and learned_limits, the prompt budget an
// endpoint's context-overflow answers taught for a model, so later turns fit the first time.

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

// The chat's context state; defaults when it has none. Through the connection's cache (every
// turn reads it). Throws SQLite::Exception.
context::ContextState load_context_state(db::StatementCache& cache, const std::string& chat_id);

// Stores the chat's context state (one write transaction). Throws SQLite::Exception.
void save_context_state(SQLite::Database& db, const std::string& chat_id,
                        const context::ContextState& state);
// The same inside the caller's write transaction.
void write_context_state(SQLite::Database& db, const std::string& chat_id,
                         const context::ContextState& state);

// What an endpoint taught about a model's prompt size.
struct LearnedLimit {
  int64_t budget_tokens = 0;            // the whole prompt, in the engine's tokens
  std::optional<int64_t> stated_limit;  // the window the server stated, in its tokens
  std::string message;                  // the server's answer
  std::string learned_at;
};

// The limit learned for (`endpoint`, `model`), if any. Throws SQLite::Exception.
// The stable blocks of the chat's last answered prompt (context_blocks), and replacing them
// (inside the caller's transaction: the turn's completion).
std::vector<context::BlockRecord> load_blocks(db::StatementCache& cache,
                                              const std::string& chat_id);
void write_blocks(SQLite::Database& db, const std::string& chat_id,
                  const std::vector<context::BlockRecord>& blocks);

std::optional<LearnedLimit> learned_limit(SQLite::Database& db, const std::string& endpoint,
                                          const std::string& model);

// Records `limit` for (`endpoint`, `model`). A limit the server stated replaces what was stored
// (the server said so); one guessed without a stated window never raises a smaller one.
// Returns the budget now stored. Throws SQLite::Exception.
int64_t learn_limit(SQLite::Database& db, const std::string& endpoint, const std::string& model,
                    const LearnedLimit& limit);

struct LearnedLimitRow {
  std::string endpoint;
  std::string model;
  LearnedLimit limit;
};

// Every learned limit (`autonous context limits`), and forgetting them all (`--clear`: after a
// server's window grew); forget_limits returns how many were deleted. Throw SQLite::Exception.
std::vector<LearnedLimitRow> learned_limits(SQLite::Database& db);
int64_t forget_limits(SQLite::Database& db);
// The same on PostgreSQL (pg_chat_settings_store.cpp).
std::vector<LearnedLimitRow> learned_limits(db::pg::Connection& c);
int64_t forget_limits(db::pg::Connection& c);

// OPENAI_BASE_URL as the key of learned limits: trailing slashes do not make another endpoint.
std::string endpoint_key(std::string base_url);

}  // namespace autonous::store
