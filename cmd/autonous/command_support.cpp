#include "cmd/autonous/command_support.h"

#include <iterator>

#include <SQLiteCpp/Database.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "internal/backend/migrations.h"
#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/migrator.h"
#include "internal/backend/postgres/queue.h"
#include "internal/backend/sqlite/database.h"
#include "internal/backend/sqlite/migrator.h"
#include "internal/backend/sqlite/queue.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/tokens/counter_factory.h"
#include "internal/tokens/token_counter.h"

namespace autonous::cmd {

std::unique_ptr<SQLite::Database> open_db(const config::Config& config) {
  if (!config.database_url.empty())
    throw config::ConfigError(
        "DATABASE_URL",
        "this command runs on SQLite only so far (unset DATABASE_URL to use DB_PATH)");
  auto db = db::open(config.db_path,
                     db::OpenOptions{config.sqlite_synchronous == config::Synchronous::kFull,
                                     config.sqlite_busy_timeout});
  db::migrate(*db);
  return db;
}

std::unique_ptr<db::pg::Connection> open_pg(const config::Config& config) {
  auto c = db::pg::Connection::open(config.database_url);
  db::pg_migrate(*c);
  return c;
}

QueueHandle open_queue(const config::Config& config, bool for_reading) {
  QueueHandle h;
  if (!config.database_url.empty()) {
    h.pg = open_pg(config);
    h.queue = std::make_unique<queue::PgQueue>(*h.pg);
  } else {
    h.sqlite = for_reading ? open_db_for_reading(config) : open_db(config);
    h.queue = std::make_unique<queue::Queue>(*h.sqlite);
  }
  return h;
}

std::unique_ptr<SQLite::Database> open_db_for_reading(const config::Config& config) {
  if (!config.database_url.empty()) return open_db(config);  // refused, naming DATABASE_URL
  try {
    return open_db(config);
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() != SQLITE_READONLY && e.getErrorCode() != SQLITE_CANTOPEN) throw;
    auto db = db::open_read_only(config.db_path, config.sqlite_busy_timeout);
    const int version = db::schema_version(*db);
    if (version != db::embedded_migrations().back().version)
      throw std::runtime_error("the database is read-only and at schema version " +
                               std::to_string(version) + "; `autonous migrate` it first");
    spdlog::debug("database is read-only; reading it as it is");
    return db;
  }
}

std::unique_ptr<tokens::TokenCounter> make_counter(const config::Config& config,
                                                   const std::string& setting) {
  try {
    auto choice =
        tokens::make_token_counter(setting, config.openai_model, config.tokenizer_data_dir);
    if (!choice.warning.empty()) spdlog::warn("token counter: {}", choice.warning);
    return std::move(choice.counter);
  } catch (const std::exception& e) {
    throw config::ConfigError("TOKEN_COUNTER", e.what());
  }
}

const tokens::TokenCounter& token_counter(const config::Config& config) {
  static const std::unique_ptr<tokens::TokenCounter> kCounter =
      make_counter(config, config.token_counter);
  return *kCounter;
}

store::EngineSettings engine_settings(const config::Config& config) {
  return store::engine_settings(config, token_counter(config));
}

std::string read_all(std::istream& in) {
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace autonous::cmd
