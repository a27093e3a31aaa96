#include "cmd/autonous/command_support.h"

#include <iterator>

#include <SQLiteCpp/Database.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "internal/db/database.h"
#include "internal/db/migrations.h"
#include "internal/db/migrator.h"
#include "internal/tokens/counter_factory.h"
#include "internal/tokens/token_counter.h"

namespace autonous::cmd {

std::unique_ptr<SQLite::Database> open_db(const config::Config& config) {
  auto db = db::open(config.db_path,
                     db::OpenOptions{config.sqlite_synchronous == config::Synchronous::kFull,
                                     config.sqlite_busy_timeout});
  db::migrate(*db);
  return db;
}

std::unique_ptr<SQLite::Database> open_db_for_reading(const config::Config& config) {
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
