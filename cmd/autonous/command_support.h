#pragma once
// What several subcommands share: opening (and migrating) the configured database, the
// configured token counter, the context engine's settings, reading stdin.

#include <istream>
#include <memory>
#include <string>

#include "internal/backend/session.h"
#include "internal/config/config.h"
#include "internal/engine/engine.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::cmd {

// The configured database (DATABASE_URL's PostgreSQL or DB_PATH's SQLite file) through the
// backend seam, migrated first, so a fresh DB_PATH just works. `for_reading`: the command only
// reads, and a SQLite file that cannot be written is read as it is when its schema is current.
std::unique_ptr<backend::Session> open_database(const config::Config& config,
                                                bool for_reading = false);

// Builds the counter `setting` (a TOKEN_COUNTER value) names. A fallback of `auto` is logged as
// a warning; an explicit encoding that cannot load is a ConfigError.
std::unique_ptr<tokens::TokenCounter> make_counter(const config::Config& config,
                                                   const std::string& setting);

// The configured counter, built once per process.
const tokens::TokenCounter& token_counter(const config::Config& config);

// The counter for `model` (a chat's own, `chat set --model`): under TOKEN_COUNTER=auto the
// model's own, built once per process and model (thread-safe); else the configured one. A
// fallback to the estimate is logged once.
const tokens::TokenCounter& token_counter_for(const config::Config& config,
                                              const std::string& model);

// The engine's settings from the environment; throws ConfigError naming the variable.
engine::EngineSettings engine_settings(const config::Config& config);

std::string read_all(std::istream& in);

}  // namespace autonous::cmd
