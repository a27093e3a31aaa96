// A Session on DB_PATH's SQLite file: the connection cannot be lost, but the file can be deleted
// or replaced under a running worker. Also the dashboard's PageDb on that file.
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include <SQLiteCpp/Database.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "internal/backend/drivers.h"
#include "internal/backend/sqlite/database.h"
#include "internal/backend/sqlite/events.h"
#include "internal/backend/sqlite/migrator.h"
#include "internal/backend/sqlite/page_db.h"
#include "internal/backend/sqlite/queue.h"
#include "internal/backend/sqlite/reply_outbox.h"
#include "internal/backend/sqlite/search_index.h"
#include "internal/backend/sqlite/sqlite_provider.h"
#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/backend/sqlite/write_transaction.h"
#include "internal/config/config.h"
#include "internal/engine/engine_storage.h"

namespace autonous::backend {
namespace {

// The events of a SQLite file in id order: ids are given out in commit order (one writer at a
// time), so nothing can appear behind the last one read.
class SqliteFeed final : public EventFeed {
 public:
  SqliteFeed(SQLite::Database& db, events::EventFilter filter) : db_(db), filter_(filter) {}
  std::vector<events::StoredEvent> next(bool& more) override {
    std::vector<events::StoredEvent> batch = events::query(db_, filter_);
    if (!batch.empty()) filter_.after_id = batch.back().id;
    more = batch.size() == static_cast<size_t>(filter_.limit);
    return batch;
  }

 private:
  SQLite::Database& db_;
  events::EventFilter filter_;
};

class SqliteSession final : public Session, public EventLog, public ChatAdmin {
 public:
  SqliteSession(std::string path, std::unique_ptr<SQLite::Database> db)
      : path_(std::move(path)), db_(std::move(db)), queue_(*db_), outbox_(*db_) {}

  queue::TaskQueue& queue() override { return queue_; }
  queue::ReplyOutbox& outbox() override { return outbox_; }
  std::unique_ptr<engine::EngineStorage> engine_storage() override {
    return store::make_sqlite_storage(*db_);
  }
  bool lost() const noexcept override { return false; }
  bool transient(const std::exception& error) const noexcept override {
    const auto* e = dynamic_cast<const SQLite::Exception*>(&error);
    if (e == nullptr) return false;
    const int code = e->getErrorCode() & 0xff;  // the primary code of an extended one
    return code == SQLITE_BUSY || code == SQLITE_LOCKED || code == SQLITE_FULL;
  }
  int64_t reconnect() override {
    throw std::logic_error("a SQLite session has no connection to lose");
  }

  void check_still_there() override {
    const auto t = std::chrono::steady_clock::now();
    if (inode_ != 0 && t - last_check_ < std::chrono::seconds(1)) return;
    last_check_ = t;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0)
      throw std::runtime_error("the database file " + path_ +
                               " was deleted while the worker ran; stopping");
    if (inode_ == 0) {
      device_ = st.st_dev;
      inode_ = st.st_ino;
    } else if (st.st_dev != device_ || st.st_ino != inode_) {
      throw std::runtime_error("the database file " + path_ +
                               " was replaced while the worker ran; stopping");
    }
  }

  bool write_if(const std::function<bool()>& body) override {
    db::WriteTransaction tx(*db_);
    if (!body()) return false;  // rolled back
    tx.commit();
    return true;
  }
  EventLog& events() override { return *this; }
  ChatAdmin& chats() override { return *this; }
  int schema_version() override { return db::schema_version(*db_); }
  int64_t index_search() override { return store::SearchIndex(*db_).index_all(); }

  // EventLog
  int64_t append(const events::Event& event) override { return events::append(*db_, event); }
  std::vector<events::StoredEvent> query(const events::EventFilter& filter) override {
    return events::query(*db_, filter);
  }
  std::vector<events::EstimateStats> estimate_stats(const events::StatsFilter& filter) override {
    return events::estimate_stats(*db_, filter);
  }
  events::CompressionStats compression_stats(const events::StatsFilter& filter) override {
    return events::compression_stats(*db_, filter);
  }
  std::vector<events::CostStats> cost_stats(const events::StatsFilter& filter) override {
    return events::cost_stats(*db_, filter);
  }
  std::unique_ptr<EventFeed> feed(const events::EventFilter& filter, bool /*follow*/) override {
    return std::make_unique<SqliteFeed>(*db_, filter);
  }

  // ChatAdmin
  engine::ChatState chat_state(const std::string& chat) override {
    return store::SQLiteProvider(*db_).chat_state(chat);
  }
  std::vector<engine::Pin> pins(const std::string& chat) override {
    db::StatementCache cache(*db_);
    return store::load_pins(cache, chat);
  }
  void save_overrides(const std::string& chat, const std::string& settings_json) override {
    store::save_overrides(*db_, chat, settings_json);
  }
  bool reset_overrides(const std::string& chat) override {
    return store::reset_overrides(*db_, chat);
  }
  int64_t clear_context(const std::string& chat) override {
    return store::clear_context(*db_, chat);
  }
  int64_t add_pin(const std::string& chat, const std::string& text) override {
    return store::add_pin(*db_, chat, text);
  }
  bool remove_pin(const std::string& chat, int64_t pin_id) override {
    return store::remove_pin(*db_, chat, pin_id);
  }
  std::vector<engine::LearnedLimitRow> learned_limits() override {
    return store::learned_limits(*db_);
  }
  int64_t forget_limits() override { return store::forget_limits(*db_); }

 private:
  const std::string path_;
  std::unique_ptr<SQLite::Database> db_;
  queue::Queue queue_;
  queue::SqliteOutbox outbox_;
  uint64_t device_ = 0;  // DB_PATH's file as first checked
  uint64_t inode_ = 0;
  std::chrono::steady_clock::time_point last_check_;
};

std::unique_ptr<SQLite::Database> open_file(const config::Config& config, bool migrate) {
  auto db = db::open(config.db_path,
                     db::OpenOptions{config.sqlite_synchronous == config::Synchronous::kFull,
                                     config.sqlite_busy_timeout});
  if (migrate) db::migrate(*db);
  return db;
}

// A file that cannot be written (a read-only file or folder), read as it is when its schema is
// current. Throws otherwise.
std::unique_ptr<SQLite::Database> open_for_reading(const config::Config& config, bool migrate) {
  try {
    return open_file(config, migrate);
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

}  // namespace

std::unique_ptr<Session> open_sqlite_session(const config::Config& config,
                                             const OpenOptions& options) {
  if (options.must_exist && !std::filesystem::exists(config.db_path))
    throw config::ConfigError("DB_PATH", config.db_path +
                                             " does not exist; this command reads a database, "
                                             "it does not create one (a typo in DB_PATH?)");
  return std::make_unique<SqliteSession>(
      config.db_path, options.read_only_ok ? open_for_reading(config, options.migrate)
                                           : open_file(config, options.migrate));
}

std::unique_ptr<ops::PageDb> open_sqlite_page_db(const config::Config& config, bool need_write) {
  const std::chrono::milliseconds busy(1000);
  const bool full = config.sqlite_synchronous == config::Synchronous::kFull;
  return ops::sqlite_page_db(need_write ? db::open(config.db_path, db::OpenOptions{full, busy})
                                        : db::open_read_only(config.db_path, busy));
}

}  // namespace autonous::backend
