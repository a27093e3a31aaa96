#pragma once
// The backend seam as a worker uses it. A Session is one connection to the configured database:
// the task queue and the engine's storage on that connection, and what to do when the connection
// is lost. A Listener wakes idle slots when a task becomes claimable. open_session and
// open_listener are the only code in internal/ that looks at which backend is configured
// (DB_PATH's SQLite file or DATABASE_URL's PostgreSQL): internal/worker never names one (the
// layering test refuses it any backend's headers). The commands in cmd/ still choose for
// themselves.
// Not thread-safe: one session per thread.

#include <cstdint>
#include <functional>
#include <memory>

namespace autonous::config {
struct Config;
}
namespace autonous::queue {
class TaskQueue;
}
namespace autonous::store {
class EngineStorage;
}

namespace autonous::backend {

class Session {
 public:
  virtual ~Session() = default;

  // The queue on this session's connection; lives as long as the session.
  virtual queue::TaskQueue& queue() = 0;

  // A new engine storage on this session's connection. The session must outlive it.
  virtual std::unique_ptr<store::EngineStorage> engine_storage() = 0;

  // True when the connection is gone (a server restart, a failover, a terminated session) and
  // reconnect() may bring it back. A SQLite file is never lost: false.
  virtual bool lost() const noexcept = 0;

  // Connects again; then the queue re-measures the server's clock and gives back a task claimed in
  // a transaction whose outcome was lost (its lease would hold up its chat). Returns that task's
  // id, 0 when there was none. Throws when connecting fails (std::logic_error where nothing can
  // be lost).
  virtual int64_t reconnect() = 0;

  // Throws std::runtime_error, saying so, when the configured database is no longer the one this
  // session first saw at its first call (a SQLite file deleted or replaced while the worker ran:
  // it would otherwise write into an unlinked file that nothing reads). Cheap: checks at most
  // once a second.
  virtual void check_still_there() = 0;
};

// Opens a session on the configured database. Throws when it cannot be opened.
std::unique_ptr<Session> open_session(const config::Config& config);

// Wakes idle slots while it lives; its destructor stops it.
class Listener {
 public:
  virtual ~Listener() = default;
};

// Called with how many idle slots may claim now.
using Wake = std::function<void(int slots)>;

// A listener for a process of `slots` slots, started before returning (so no notification falls
// between a slot's empty claim and its wait), or nullptr where the backend has none (SQLite: the
// slots poll every POLL_INTERVAL_MS). Throws std::invalid_argument when `wake` is empty, and
// when it cannot connect.
std::unique_ptr<Listener> open_listener(const config::Config& config, Wake wake, int slots);

}  // namespace autonous::backend
