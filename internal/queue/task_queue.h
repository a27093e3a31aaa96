#pragma once
// TaskQueue: what a queue backend does, whichever database holds it: enqueue, claim, renew
// lease, complete, retry later, fail, release, requeue, stats. backend/sqlite/queue.h is the SQLite
// backend, backend/postgres/queue.h the PostgreSQL one; both keep the same guarantees:
// - claims are leases fenced by a random token: every state change after the claim succeeds
//   only while the token still matches, so a worker whose lease was taken over changes nothing;
// - per chat, only the chat's head (its running task, else its oldest queued one) is claimable,
//   so two tasks of a chat never run at once and a chat's tasks run in queue order;
// - a completion writes the user/assistant pair, the task's state and its events in one
//   transaction (the history's unique (task_id, role) index refuses a second pair).
// Not thread-safe: one queue per connection, one connection per thread.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/clock.h"
#include "internal/common/message.h"
#include "internal/events/event_log.h"
#include "internal/queue/task.h"

namespace autonous::queue {

// The token counts of the texts a completion writes into history, by the worker's exact counter
// `counter` (migration 0018: a later turn reads them instead of counting again). An empty
// `counter`, or a count of -1, stores none. `steps`: one per step, or empty.
struct TurnTokens {
  std::string counter;
  int64_t user = -1;
  std::vector<int64_t> steps;
  int64_t reply = -1;
};

struct QueueStats {
  int64_t queued = 0;
  int64_t running = 0;
  int64_t done = 0;
  int64_t failed = 0;
  int64_t cancelled = 0;
  std::optional<double> oldest_queued_age_seconds;
  struct Failure {
    int64_t task_id;
    std::string chat_id;
    std::string error;
    std::string finished_at;
  };
  std::vector<Failure> recent_failures;  // newest first, at most 5
};

// A task as a front end sees it (`autonous wait`, `autonous cancel`).
struct TaskState {
  std::string chat_id;
  std::string status;  // queued | running | done | failed | cancelled
  std::optional<std::string> reply;
  std::optional<std::string> error;
  std::optional<std::string> partial_reply;
  int attempts = 0;
  std::string finished_at;  // "" while it has not ended
};

// What cancel() did: `cancelled` when the task was queued or running (`was`); otherwise the
// task had ended already and `was` is its status.
struct CancelResult {
  bool cancelled = false;
  std::string was;
};

class TaskQueue {
 public:
  virtual ~TaskQueue() = default;

  // Queues `text` for `chat_id` and returns the task id. Throws when a constraint refuses it
  // (empty text or chat id). REQUIRES: no transaction open on this connection.
  virtual int64_t enqueue(const std::string& chat_id, const std::string& text,
                          int priority = 0) = 0;

  // Claims the highest-priority, oldest runnable chat head (queued with run_after reached, or
  // running under an expired lease), counts the attempt, and records agent.started in the same
  // transaction. Returns nullopt when nothing is runnable.
  virtual std::optional<Task> claim(const std::string& worker_id, common::TimePoint now,
                                    std::chrono::seconds lease) = 0;

  // Extends the lease to now + lease. False when the lease was lost (then commit nothing).
  virtual bool renew_lease(const Task& task, common::TimePoint now, std::chrono::seconds lease) = 0;

  // One transaction: the user/assistant pair into history, the task done with `reply`, the
  // turn's events (`list`). False (and nothing written) when this worker no longer holds the
  // lease. `user_text` is what goes into history as the user's message.
  virtual bool complete(const Task& task, const std::string& user_text, const std::string& reply,
                        const std::vector<events::Event>& list) = 0;

  // complete(), and in the same transaction claim() the next runnable task for `worker_id`.
  // Returns {completed, next}; next is nullopt when nothing is runnable or the completion was
  // refused (lease lost: nothing is written).
  struct CompleteAndClaim {
    bool completed = false;
    std::optional<Task> next;
  };
  virtual CompleteAndClaim complete_and_claim(const Task& task, const std::string& user_text,
                                              const std::string& reply,
                                              const std::vector<events::Event>& list,
                                              const std::string& worker_id, common::TimePoint now,
                                              std::chrono::seconds lease) = 0;

  // The same steps inside a transaction the caller owns (backend::Session::write_if: the worker
  // stores the turn's other writes, e.g. the chat's context state, in it). complete_within
  // returns false, having written nothing, when the lease is lost: the caller rolls back.
  // `steps` go into history between the user's message and the reply, in order: a tool-using
  // turn's assistant messages with their tool_calls and its tool results with their
  // tool_call_id (each stored in the column of that name). `tokens`: the rows' token counts.
  virtual bool complete_within(const Task& task, const std::string& user_text,
                               const std::vector<common::Message>& steps, const std::string& reply,
                               const std::vector<events::Event>& list,
                               const TurnTokens& tokens) = 0;
  virtual std::optional<Task> claim_within(const std::string& worker_id, common::TimePoint now,
                                           std::chrono::seconds lease) = 0;

  // Puts the task back to run at `run_after`, keeping `error` as the last error.
  virtual bool retry_later(const Task& task, common::TimePoint run_after, const std::string& error,
                           const std::vector<events::Event>& list) = 0;

  // Fails the task for good with `error`.
  virtual bool fail(const Task& task, const std::string& error,
                    const std::vector<events::Event>& list) = 0;

  // Gives the lease back (shutdown): queued again at once, the attempt not counted.
  virtual bool release(const Task& task, const std::vector<events::Event>& list) = 0;

  // Puts one failed task back in the queue with its attempts reset. False if it is not failed.
  virtual bool requeue(int64_t task_id) = 0;
  // Puts every failed task back, oldest first, each as requeue() does (written once, for every
  // backend: task_queue.cpp); returns how many.
  int64_t requeue_failed();
  // The ids of the failed tasks, oldest first.
  virtual std::vector<int64_t> failed_ids() = 0;

  // Writes a streamed reply's text so far into the task's partial_reply (STREAM_REPLIES), in a
  // transaction of its own. False, writing nothing, when the lease is lost. Every later state
  // change (done, retry, failure, release, cancel) clears it.
  virtual bool set_partial(const Task& task, const std::string& text) = 0;

  // Cancels task `task_id` when it is queued or running; nullopt when there is no such task.
  // A running task's worker commits nothing more (its writes are fenced on status 'running')
  // and stops at its next step; the chat's next task may run. The migration's trigger stamps
  // finished_at and records task.cancelled in the same transaction, whoever cancels.
  virtual std::optional<CancelResult> cancel(int64_t task_id) = 0;
  // The task's state now; nullopt when there is no such task. Reads only.
  virtual std::optional<TaskState> state(int64_t task_id) = 0;
  // True while `task` is still this claim's: running under its lease token. Reads only (a
  // cancelled or taken-over task is not); the slot asks this often during a call.
  virtual bool still_held(const Task& task) = 0;

  // True when a completion that claims another chat's task leaves its own chat's next task
  // unannounced (PostgreSQL: migrations/postgres/0016), so the worker wakes an idle slot of its
  // process to look.
  virtual bool quiet_completions() const noexcept { return false; }
  // True while any task is queued or running.
  virtual bool has_pending() = 0;

  virtual QueueStats stats(common::TimePoint now) = 0;
};

}  // namespace autonous::queue
