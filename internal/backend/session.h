#pragma once
// The backend seam. A Session is one connection to the configured database and everything the
// product asks of it: the task queue, the engine's storage, a write transaction, the event log
// (append, query, stats, the follow feed), the chat administration (settings, pins, clear,
// learned limits), the schema version and the search index's catch-up, and what to do when the
// connection is lost. A Listener wakes idle slots when a task becomes claimable; a PageDb
// (ops/page_db.h) serves the dashboard's reads. open_session, open_listener, open_page_db (and
// copy_deployment, copy.h) are the only code that looks at which backend is configured (DB_PATH's
// SQLite file or DATABASE_URL's PostgreSQL); nothing above internal/backend names one (the
// layering test refuses it any driver's headers and types).
// Not thread-safe: one session per thread.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "internal/engine/chat_settings_store.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/provider.h"
#include "internal/events/event_log.h"
#include "internal/events/event_stats.h"

namespace autonous::config {
struct Config;
}
namespace autonous::queue {
class TaskQueue;
class ReplyOutbox;
}  // namespace autonous::queue
namespace autonous::engine {
class EngineStorage;
}
namespace autonous::ops {
class PageDb;
}

namespace autonous::backend {

// The event trail as `autonous events` prints it: the events matching a filter in id order, and,
// following, newer ones as they become visible; never one skipped because its transaction
// committed after a newer one was read (PostgreSQL gives ids out at insert).
class EventFeed {
 public:
  virtual ~EventFeed() = default;
  // The next events, oldest first; empty when there is nothing new yet. Sets `more` when another
  // call would return more at once.
  virtual std::vector<events::StoredEvent> next(bool& more) = 0;
};

// The events table on a session's connection. Payloads are JSON objects; a PostgreSQL payload
// reads back in jsonb's key order.
class EventLog {
 public:
  virtual ~EventLog() = default;
  // Inserts `event` (inside the session's write() when one runs) and returns its id. Throws
  // std::invalid_argument when the payload is not a JSON object.
  virtual int64_t append(const events::Event& event) = 0;
  // Events matching `filter`, oldest first.
  virtual std::vector<events::StoredEvent> query(const events::EventFilter& filter) = 0;
  // `autonous context stats`: one row per (model, token_counter), most calls first; the
  // compression tallies.
  virtual std::vector<events::EstimateStats> estimate_stats(const events::StatsFilter& filter) = 0;
  virtual events::CompressionStats compression_stats(const events::StatsFilter& filter) = 0;
  // What the LLM calls cost, per (model, call): `context stats`, `chat show` (#31).
  virtual std::vector<events::CostStats> cost_stats(const events::StatsFilter& filter) = 0;
  // The events matching `filter` (its task and type), then, with `follow`, every newer one that
  // matches as it commits.
  virtual std::unique_ptr<EventFeed> feed(const events::EventFilter& filter, bool follow) = 0;
};

// A chat's administration (`autonous chat`, `autonous context limits`). The writers run inside
// the session's write() with the event that records them.
class ChatAdmin {
 public:
  virtual ~ChatAdmin() = default;
  // The chat's stored state (its own settings, clear point); defaults when it has none.
  virtual engine::ChatState chat_state(const std::string& chat) = 0;
  // The chat's pins, oldest first.
  virtual std::vector<engine::Pin> pins(const std::string& chat) = 0;
  // Replaces the chat's overrides with `settings_json` (a JSON object), keeping its clear point.
  virtual void save_overrides(const std::string& chat, const std::string& settings_json) = 0;
  // Back to the environment's defaults; false when the chat had no overrides.
  virtual bool reset_overrides(const std::string& chat) = 0;
  // Starts the chat's context fresh after its newest history row; returns the new clear point.
  virtual int64_t clear_context(const std::string& chat) = 0;
  // Pins `text` (valid UTF-8, not blank); returns its id.
  virtual int64_t add_pin(const std::string& chat, const std::string& text) = 0;
  // Removes pin `pin_id` of the chat; false when the chat has no such pin.
  virtual bool remove_pin(const std::string& chat, int64_t pin_id) = 0;
  // Every learned limit, and forgetting them all (returns how many; a writer, inside write()).
  virtual std::vector<engine::LearnedLimitRow> learned_limits() = 0;
  virtual int64_t forget_limits() = 0;
};

class Session {
 public:
  virtual ~Session() = default;

  // The queue on this session's connection; lives as long as the session.
  virtual queue::TaskQueue& queue() = 0;

  // The reply webhook's outbox on this session's connection (queue/reply_outbox.h).
  virtual queue::ReplyOutbox& outbox() = 0;

  // A new engine storage on this session's connection. The session must outlive it.
  virtual std::unique_ptr<engine::EngineStorage> engine_storage() = 0;

  // True when the connection is gone (a server restart, a failover, a terminated session) and
  // reconnect() may bring it back. A SQLite file is never lost: false.
  virtual bool lost() const noexcept = 0;

  // True when `error`, thrown by a call on this session, is one to wait out rather than stop
  // for: the connection lost; a server that refuses writes for now (a standby, a failover not
  // yet promoted: 25006), a statement cancelled by pg_cancel_backend (57014; a statement_timeout's
  // 57014 would recur and is not),
  // a server starting, shutting down or out of resources (57P0x, 53xxx, 08xxx), a lock or
  // serialization conflict (55P03, 40001, 40P01); on SQLite a lock held past the busy timeout or
  // a full disk. The worker backs off and tries again, and such an error never counts as one
  // of a task's attempts.
  virtual bool transient(const std::exception& error) const noexcept = 0;

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

  // Runs `body` inside one write transaction on this connection: committed when it returns,
  // rolled back when it throws (the exception passes on).
  void write(const std::function<void()>& body) {
    write_if([&] {
      body();
      return true;
    });
  }
  // The same, committed only when `body` returns true (rolled back when false or when it
  // throws); returns what `body` returned. The worker's completion: the queue's writes
  // (TaskQueue::complete_within, claim_within) and the engine's state in one transaction.
  virtual bool write_if(const std::function<bool()>& body) = 0;
  virtual EventLog& events() = 0;
  virtual ChatAdmin& chats() = 0;
  // The schema version the database is at.
  virtual int schema_version() = 0;
  // Indexes every row queued for recall's search (a whole history after an upgrade, an import
  // made while no worker ran); returns how many.
  virtual int64_t index_search() = 0;
};

struct OpenOptions {
  // Apply this binary's migrations first, so a fresh DB_PATH just works (the commands and the
  // worker's start; a worker's slots open after it migrated).
  bool migrate = false;
  // The command only reads: a SQLite file that cannot be written (a read-only file or folder)
  // is read as it is, provided its schema is current.
  bool read_only_ok = false;
  // The database must be there already (the dashboard reads one, it does not create one): a
  // missing SQLite file is a config::ConfigError naming DB_PATH.
  bool must_exist = false;
};

// Opens a session on the configured database. Throws when it cannot be opened, and
// db::SchemaTooNewError (backend/migrations.h) when migrating a database a newer binary wrote.
std::unique_ptr<Session> open_session(const config::Config& config,
                                      const OpenOptions& options = {});

// A connection of its own for the dashboard's reads (a server thread's). `need_write`: the
// worker's surface, whose health probe asks whether a worker could write (SQLite: opened for
// writing); otherwise read-only. Short lock waits (a probe must answer quickly).
std::unique_ptr<ops::PageDb> open_page_db(const config::Config& config, bool need_write);

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

// The connections a process's sessions share (DATABASE_POOL_SIZE) where the backend pools them
// (PostgreSQL); nullopt where each session has its own (SQLite).
std::optional<int> connection_pool_size(const config::Config& config);

// Waits for tasks to end (`autonous wait`): PostgreSQL LISTENs on autonous_task_ended
// (migrations/postgres/0020, TASK_ENDED_NOTIFY); SQLite has no notification and waits a
// short poll step.
class EndingWatch {
 public:
  virtual ~EndingWatch() = default;
  // Returns once a task may have ended, or after at most `timeout`; the caller reads the task.
  virtual void wait(std::chrono::milliseconds timeout) = 0;
};

// Listening before it returns (so no ending falls between the caller's read and its wait).
// Never throws for a PostgreSQL that refuses LISTEN: it then polls.
std::unique_ptr<EndingWatch> watch_endings(const config::Config& config);

}  // namespace autonous::backend
