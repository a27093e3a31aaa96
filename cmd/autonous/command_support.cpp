#include "cmd/autonous/command_support.h"

#include <iterator>

#include <SQLiteCpp/Database.h>
#include <spdlog/spdlog.h>

#include "internal/context/counter_factory.h"
#include "internal/context/token_counter.h"
#include "internal/db/database.h"
#include "internal/db/migrator.h"

namespace autonous::cmd {

std::unique_ptr<SQLite::Database> open_db(const config::Config& config) {
  auto db = db::open(config.db_path,
                     db::OpenOptions{config.sqlite_synchronous == config::Synchronous::kFull,
                                     config.sqlite_busy_timeout});
  db::migrate(*db);
  return db;
}

std::unique_ptr<context::TokenCounter> make_counter(const config::Config& config,
                                                    const std::string& setting) {
  try {
    auto choice =
        context::make_token_counter(setting, config.openai_model, config.tokenizer_data_dir);
    if (!choice.warning.empty()) spdlog::warn("token counter: {}", choice.warning);
    return std::move(choice.counter);
  } catch (const std::exception& e) {
    throw config::ConfigError("TOKEN_COUNTER", e.what());
  }
}

const context::TokenCounter& token_counter(const config::Config& config) {
  static const std::unique_ptr<context::TokenCounter> kCounter =
      make_counter(config, config.token_counter);
  return *kCounter;
}

worker::EngineConfig engine(const config::Config& config) {
  return worker::engine_config(config, token_counter(config));
}

std::string read_all(std::istream& in) {
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace autonous::cmd
