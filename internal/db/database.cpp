#include "internal/db/database.h"

#include <sqlite3.h>

#include <SQLiteCpp/Database.h>
#include <random>
#include <thread>

namespace autonous::db {
namespace {

struct BusyState {
  std::chrono::milliseconds timeout;
  std::chrono::steady_clock::time_point first_busy;
  std::minstd_rand rng{std::random_device{}()};
};

// SQLite's default busy handler sleeps longer and longer (up to 100 ms), so a process that just
// released the lock takes it back while the others sleep: under load one process starves
// (shared/notes/queue.md measured 5 s waits). Short, jittered sleeps give every waiter a chance.
int busy_handler(void* arg, int count) noexcept {
  auto* state = static_cast<BusyState*>(arg);
  const auto now = std::chrono::steady_clock::now();
  if (count == 0) state->first_busy = now;
  if (now - state->first_busy >= state->timeout) return 0;  // give up: SQLITE_BUSY
  std::uniform_int_distribution<int> micros(200, 2000);
  std::this_thread::sleep_for(std::chrono::microseconds(micros(state->rng)));
  return 1;
}

// Owns the busy handler's state for as long as the connection lives.
class Connection final : public SQLite::Database {
 public:
  Connection(const std::string& path, std::chrono::milliseconds timeout)
      : SQLite::Database(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_FULLMUTEX),
        busy_(std::make_unique<BusyState>(BusyState{timeout, {}})) {
    sqlite3_busy_handler(getHandle(), &busy_handler, busy_.get());
  }

 private:
  std::unique_ptr<BusyState> busy_;
};

}  // namespace

std::unique_ptr<SQLite::Database> open(const std::string& path, const OpenOptions& options) {
  auto db = std::make_unique<Connection>(path, options.busy_timeout);
  db->exec("PRAGMA journal_mode=WAL");
  db->exec("PRAGMA foreign_keys=ON");
  db->exec(options.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  return db;
}

}  // namespace autonous::db
