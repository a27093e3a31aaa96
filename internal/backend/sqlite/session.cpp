// A Session on DB_PATH's SQLite file: the connection cannot be lost, but the file can be deleted
// or replaced under a running worker.
#include <chrono>
#include <stdexcept>

#include <SQLiteCpp/Database.h>
#include <sys/stat.h>

#include "internal/backend/drivers.h"
#include "internal/backend/sqlite/database.h"
#include "internal/backend/sqlite/queue.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/config/config.h"
#include "internal/store/engine_storage.h"

namespace autonous::backend {
namespace {

class SqliteSession final : public Session {
 public:
  explicit SqliteSession(const config::Config& config)
      : path_(config.db_path),
        db_(db::open(config.db_path,
                     db::OpenOptions{config.sqlite_synchronous == config::Synchronous::kFull,
                                     config.sqlite_busy_timeout})),
        queue_(*db_) {}

  queue::TaskQueue& queue() override { return queue_; }
  std::unique_ptr<store::EngineStorage> engine_storage() override {
    return store::make_sqlite_storage(*db_);
  }
  bool lost() const noexcept override { return false; }
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

 private:
  const std::string path_;
  std::unique_ptr<SQLite::Database> db_;
  queue::Queue queue_;
  uint64_t device_ = 0;  // DB_PATH's file as first checked
  uint64_t inode_ = 0;
  std::chrono::steady_clock::time_point last_check_;
};

}  // namespace

std::unique_ptr<Session> open_sqlite_session(const config::Config& config) {
  return std::make_unique<SqliteSession>(config);
}

}  // namespace autonous::backend
