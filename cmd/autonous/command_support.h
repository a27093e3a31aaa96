#pragma once
// What several subcommands share: opening (and migrating) the database of either backend, the
// configured token counter, the context engine's settings, reading stdin.

#include <istream>
#include <memory>
#include <string>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/config/config.h"
#include "internal/queue/task_queue.h"
#include "internal/store/engine.h"

namespace SQLite {
class Database;
}
namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::cmd {

// Opens DB_PATH and migrates it when needed, so a fresh DB_PATH just works. Throws
// config::ConfigError (exit 2) when DATABASE_URL selects PostgreSQL: for commands that run on
// SQLite only (the copy's source); the others call with_database().
std::unique_ptr<SQLite::Database> open_db(const config::Config& config);

// Connects to DATABASE_URL and migrates it when needed.
std::unique_ptr<db::pg::Connection> open_pg(const config::Config& config);

// The queue of the configured backend (DATABASE_URL or DB_PATH) with the connection it uses,
// migrated. `for_reading`: SQLite may be read-only (open_db_for_reading).
struct QueueHandle {
  std::unique_ptr<SQLite::Database> sqlite;
  std::unique_ptr<db::pg::Connection> pg;
  std::unique_ptr<queue::TaskQueue> queue;
};
QueueHandle open_queue(const config::Config& config, bool for_reading = false);

// For commands that only read: open_db(), or, when the database cannot be written (a read-only
// file or folder), the same file read-only, provided its schema is current. Throws otherwise.
std::unique_ptr<SQLite::Database> open_db_for_reading(const config::Config& config);

// Builds the counter `setting` (a TOKEN_COUNTER value) names. A fallback of `auto` is logged as
// a warning; an explicit encoding that cannot load is a ConfigError.
std::unique_ptr<tokens::TokenCounter> make_counter(const config::Config& config,
                                                   const std::string& setting);

// The configured counter, built once per process.
const tokens::TokenCounter& token_counter(const config::Config& config);

// The engine's settings from the environment; throws ConfigError naming the variable.
store::EngineSettings engine_settings(const config::Config& config);

std::string read_all(std::istream& in);

// Runs `f` on the configured backend's open, migrated connection: a SQLite::Database& (DB_PATH)
// or a db::pg::Connection& (DATABASE_URL); the store, event and transaction functions `f` calls
// have an overload for each. `for_reading`: SQLite through open_db_for_reading().
template <typename F>
auto with_database(const config::Config& config, F&& f, bool for_reading = false) {
  if (!config.database_url.empty()) return f(*open_pg(config));
  return f(*(for_reading ? open_db_for_reading(config) : open_db(config)));
}

}  // namespace autonous::cmd
