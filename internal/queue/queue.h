#pragma once
// Queue: enqueue, claim, renew lease, complete, retry later, fail, release, requeue.
// Claims are leases fenced by a random token: every state change after the claim succeeds only
// while the token still matches, so a worker whose lease was taken over changes nothing.
// Per-chat ordering: only a chat's oldest active task (its row in chat_heads) is claimable.
// Not thread-safe: one Queue per connection, one connection per thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/clock.h"
#include "internal/db/statement_cache.h"
#include "internal/events/event_log.h"
#include "internal/queue/task.h"

namespace SQLite {
class Database;
}

namespace autonous::queue {

struct QueueStats {
  int64_t queued = 0;
  int64_t running = 0;
  int64_t done = 0;
  int64_t failed = 0;
  std::optional<double> oldest_queued_age_seconds;
  struct Failure {
    int64_t task_id;
    std::string chat_id;
    std::string error;
    std::string finished_at;
  };
  std::vector<Failure> recent_failures;  // newest first, at most 5
};

class Queue {
 public:
  // `db` must outlive the Queue.
  explicit Queue(SQLite::Database& db) : db_(db), cache_(db) {}

  // Queues `text` for `chat_id` and returns the task id. Throws SQLite::Exception when a
  // constraint refuses it (empty text or chat id). Like every write here it opens its own
  // db::WriteTransaction. REQUIRES: no transaction open on this connection.
  int64_t enqueue(const std::string& chat_id, const std::string& text, int priority = 0);

  // Claims the highest-priority, oldest runnable chat head (queued with run_after reached, or
  // running under an expired lease), counts the attempt, and records agent.started in the same
  // transaction. Returns nullopt when nothing is runnable.
  std::optional<Task> claim(const std::string& worker_id, common::TimePoint now,
                            std::chrono::seconds lease);

  // Extends the lease to now + lease. False when the lease was lost (then commit nothing).
  bool renew_lease(const Task& task, common::TimePoint now, std::chrono::seconds lease);

  // One transaction: the user/assistant pair into history, the task done with `reply`, the
  // turn's events (`list`), and `also` (more writes of the turn on this connection, e.g. the
  // chat's context state; no transaction of its own). False (and nothing written) when this
  // worker no longer holds the lease. `user_text` is what goes into history as the user's
  // message.
  bool complete(const Task& task, const std::string& user_text, const std::string& reply,
                const std::vector<events::Event>& list, const std::function<void()>& also = {});

  // complete(), and in the same transaction claim() the next runnable task for `worker_id`:
  // one commit (one fsync under synchronous=FULL) per task instead of two while work is
  // waiting. Returns {completed, next}; next is nullopt when nothing is runnable or the
  // completion was refused (lease lost: nothing is written).
  struct CompleteAndClaim {
    bool completed = false;
    std::optional<Task> next;
  };
  CompleteAndClaim complete_and_claim(const Task& task, const std::string& user_text,
                                      const std::string& reply,
                                      const std::vector<events::Event>& list,
                                      const std::string& worker_id, common::TimePoint now,
                                      std::chrono::seconds lease,
                                      const std::function<void()>& also = {});

  // Puts the task back to run at `run_after`, keeping `error` as the last error.
  bool retry_later(const Task& task, common::TimePoint run_after, const std::string& error,
                   const std::vector<events::Event>& list);

  // Fails the task for good with `error`.
  bool fail(const Task& task, const std::string& error, const std::vector<events::Event>& list);

  // Gives the lease back (shutdown): queued again at once, the attempt not counted.
  bool release(const Task& task, const std::vector<events::Event>& list);

  // Puts one failed task back in the queue with its attempts reset. False if it is not failed.
  bool requeue(int64_t task_id);
  // Puts every failed task back; returns how many.
  int64_t requeue_failed();

  // True while any task is queued or running.
  bool has_pending();

  QueueStats stats(common::TimePoint now);

 private:
  // Runs `update` (bound, fenced on id + lease token) and `events` in one IMMEDIATE
  // transaction; false, writing nothing, when the fence matched no row.
  // The claim's statements; REQUIRES an open IMMEDIATE transaction and the write gate.
  std::optional<Task> claim_in_transaction(const std::string& worker_id, int64_t now_ms,
                                           std::chrono::seconds lease);
  // The completion's statements; same requirements. False when the fence matched no row.
  bool complete_in_transaction(const Task& task, const std::string& user_text,
                               const std::string& reply, const std::vector<events::Event>& list);

  bool fenced(const std::string& update_sql, const std::function<void(SQLite::Statement&)>& bind,
              const std::vector<events::Event>& list);

  SQLite::Database& db_;
  db::StatementCache cache_;
};

}  // namespace autonous::queue
