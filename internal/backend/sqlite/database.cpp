#include "internal/backend/sqlite/database.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include <SQLiteCpp/Database.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

namespace autonous::db {
namespace {

// SQLite's default busy handler sleeps longer and longer (up to 100 ms), so a process that just
// released the lock takes it back while the others sleep: under load one process starves
// (5 s waits were measured). Short, jittered sleeps give every waiter a chance.
// The timeout travels in the handler's pointer argument, so nothing is allocated per connection;
// the start of the current wait is per thread, as a connection is used by one thread at a time.
int busy_handler(void* timeout_ms, int count) noexcept {
  thread_local std::chrono::steady_clock::time_point first_busy;
  thread_local std::minstd_rand rng{std::random_device{}()};
  const auto now = std::chrono::steady_clock::now();
  if (count == 0) first_busy = now;
  const std::chrono::milliseconds timeout(reinterpret_cast<intptr_t>(timeout_ms));
  if (now - first_busy >= timeout) return 0;  // give up: SQLITE_BUSY
  std::uniform_int_distribution<int> micros(200, 2000);
  std::this_thread::sleep_for(std::chrono::microseconds(micros(rng)));
  return 1;
}

// This process's umask, read without changing it (umask() would, for every thread): Linux's
// /proc/self/status. nullopt where it cannot be read.
std::optional<mode_t> current_umask() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Umask:", 0) == 0)
      return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
  return std::nullopt;
}

// SQLite creates a database 0644 less the umask, and its -wal and -shm files with the
// database's mode. Where the umask leaves group write (the unit's UMask=0007: front ends in the
// group autonous share the queue), the files this process owns get the mode the umask allows.
void allow_what_the_umask_allows(const std::string& path) {
  const std::optional<mode_t> mask = current_umask();
  if (!mask) return;
  const mode_t want = 0666 & ~*mask;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    struct stat st {};
    const std::string file = path + suffix;
    if (::stat(file.c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    if ((st.st_mode & want) != want) ::chmod(file.c_str(), (st.st_mode & 07777) | want);
  }
}

}  // namespace

std::unique_ptr<SQLite::Database> open(const std::string& path, const OpenOptions& options) {
  auto db = std::make_unique<SQLite::Database>(
      path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_FULLMUTEX);
  sqlite3_busy_handler(
      db->getHandle(), &busy_handler,
      reinterpret_cast<void*>(static_cast<intptr_t>(options.busy_timeout.count())));
  // Switching a new file to WAL needs an exclusive lock and SQLite answers SQLITE_BUSY at once
  // there, without the busy handler: several processes opening a fresh file together hit it.
  // Retry that one step for up to the busy timeout.
  for (int waited_ms = 0;; waited_ms += 10) {
    try {
      db->exec("PRAGMA journal_mode=WAL");
      break;
    } catch (const SQLite::Exception& e) {
      if (e.getErrorCode() != SQLITE_BUSY || waited_ms >= options.busy_timeout.count()) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  allow_what_the_umask_allows(path);  // the file, and its -wal and -shm now that they exist
  db->exec("PRAGMA foreign_keys=ON");
  db->exec(options.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  return db;
}

std::unique_ptr<SQLite::Database> open_read_only(const std::string& path,
                                                 std::chrono::milliseconds busy_timeout) {
  auto db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READONLY);
  try {
    db->execAndGet("SELECT count(*) FROM sqlite_schema");
  } catch (const SQLite::Exception& e) {
    // A WAL database whose -shm file is missing and cannot be created (a read-only folder):
    // SQLite can read it only as immutable, which is what a read-only copy is.
    if (e.getErrorCode() != SQLITE_READONLY && e.getErrorCode() != SQLITE_CANTOPEN) throw;
    db = std::make_unique<SQLite::Database>("file:" + path + "?immutable=1",
                                            SQLite::OPEN_READONLY | SQLite::OPEN_URI);
    std::error_code ec;
    if (std::filesystem::file_size(path + "-wal", ec) > 0 && !ec)
      spdlog::warn(
          "reading {} as an immutable copy: its -wal file holds commits this read "
          "cannot see (open it with write access for the current state)",
          path);
  }
  sqlite3_busy_handler(db->getHandle(), &busy_handler,
                       reinterpret_cast<void*>(static_cast<intptr_t>(busy_timeout.count())));
  return db;
}

}  // namespace autonous::db
