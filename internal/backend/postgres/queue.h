#pragma once
// PgQueue: the PostgreSQL backend of TaskQueue (task_queue.h), for workers on several hosts.
// A claim is one statement (autonous_claim_head, migrations/postgres/0017): the first claimable
// chat head (one whose task is queued and due) in (priority, id) order, the head row then the
// task row locked with FOR UPDATE SKIP LOCKED, the task looked up by key, and the head marked
// running, so concurrent claimers never wait for each other, never take the same task and never
// walk past running heads; the head row's lock also makes a concurrent head
// change (a requeue, an enqueue into the chat) wait until the claimed task shows running
// (migrations/postgres/0016, autonous_recompute_head). Now and then (before the heads every
// 10 s, after them when none was claimable every second) a second statement looks for a running
// head whose lease expired. Every later change is fenced on the lease token in its WHERE
// clause, which PostgreSQL re-checks on the newest row
// version. The triggers NOTIFY kTasksChannel when a task becomes claimable, with its id as the
// payload, except after a completion, whose transaction claims the next task itself (0011,
// 0016; a worker process LISTENs on one connection: backend/postgres/listener.cpp). Times are
// compared on the server's
// clock (the offset to this host's is measured once), so hosts with skewed clocks agree on when
// a lease expires. One PgQueue per connection.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "internal/queue/task_queue.h"

namespace autonous::db::pg {
class Connection;
class Transaction;
}  // namespace autonous::db::pg

namespace autonous::queue {
inline constexpr const char* kTasksChannel = "autonous_tasks";
}

namespace autonous::queue {

class PgQueue final : public TaskQueue {
 public:
  // `c` must outlive the queue. Reads the server's clock once (see server_ms). Throws
  // db::pg::PgError. `pair_indexed` (the session's, when given): set by a completion without
  // tool steps, which indexes its rows in its own statement (store::index_new_rows), for the
  // engine's write in the same transaction (PgSearchIndex::index_in_transaction).
  explicit PgQueue(db::pg::Connection& c, bool* pair_indexed = nullptr);

  // After the connection broke and was connected again (db::pg::Connection::reconnect):
  // measures the server's clock again (a failover may have moved it) and gives back, as a
  // release does, a task claimed in a transaction whose outcome this queue never learned (a
  // claim or a completion's next task): its lease would hold up its chat for
  // TASK_LEASE_SECONDS. Returns that task's id, 0 when there was none. Throws db::pg::PgError.
  int64_t after_reconnect();
  // Around a transaction of the session's write_if: the chat of a completion that claims nothing
  // after it (a stopping slot) is notified before the commit (the head trigger does not notify
  // completions: migrations/postgres/0016).
  void transaction_begins() noexcept {
    wake_chat_.clear();
    ended_.clear();
    if (pair_indexed_ != nullptr) *pair_indexed_ = false;
  }
  void before_commit();
  // Ends a transaction of this queue's (write_if's, complete()'s): before_commit(), the commit,
  // then, on the same server session, the autonous_task_ended notifications of the tasks it
  // completed (migrations/postgres/0023) when reply_delivery said to notify. Throws what the
  // commit throws (then nothing is notified); a failed notification is only logged (debug): a
  // notification is a hint.
  void commit(db::pg::Transaction& tx);

  int64_t enqueue(const std::string& chat_id, const std::string& text, int priority = 0) override;
  std::optional<Task> claim(const std::string& worker_id, common::TimePoint now,
                            std::chrono::seconds lease) override;
  bool renew_lease(const Task& task, common::TimePoint now, std::chrono::seconds lease) override;
  bool complete(const Task& task, const std::string& user_text, const std::string& reply,
                const std::vector<events::Event>& list) override;
  CompleteAndClaim complete_and_claim(const Task& task, const std::string& user_text,
                                      const std::string& reply,
                                      const std::vector<events::Event>& list,
                                      const std::string& worker_id, common::TimePoint now,
                                      std::chrono::seconds lease) override;
  bool complete_within(const Task& task, const std::string& user_text,
                       const std::vector<common::Message>& steps, const std::string& reply,
                       const std::vector<events::Event>& list, const TurnTokens& tokens) override;
  std::optional<Task> claim_within(const std::string& worker_id, common::TimePoint now,
                                   std::chrono::seconds lease) override;
  bool retry_later(const Task& task, common::TimePoint run_after, const std::string& error,
                   const std::vector<events::Event>& list) override;
  bool fail(const Task& task, const std::string& error,
            const std::vector<events::Event>& list) override;
  bool release(const Task& task, const std::vector<events::Event>& list) override;
  bool requeue(int64_t task_id) override;
  std::vector<int64_t> failed_ids() override;
  bool set_partial(const Task& task, const std::string& text) override;
  std::optional<CancelResult> cancel(int64_t task_id) override;
  std::optional<TaskState> state(int64_t task_id) override;
  bool still_held(const Task& task) override;

  bool has_pending() override;
  bool quiet_completions() const noexcept override { return true; }
  QueueStats stats(common::TimePoint now) override;

 private:
  std::optional<Task> claim_in_transaction(const std::string& worker_id, int64_t now_ms,
                                           std::chrono::seconds lease);
  // Runs the fenced `update_sql` with `params` and appends `list`, in one transaction; false
  // (nothing written) when the fence matched no row.
  bool fenced(const std::string& update_sql, const std::vector<std::optional<std::string>>& params,
              const std::vector<events::Event>& list);

  // `t` (this host's clock) on the server's clock: the offset measured at construction.
  int64_t server_ms(common::TimePoint t) const;
  // The offset: the one this process measured for the server's URL, unless `again` or none
  // was (then measured, and kept for the process's other queues: a worker's slots).
  void measure_clock(bool again);

  db::pg::Connection& c_;
  bool* pair_indexed_;
  int64_t clock_offset_ms_ = 0;
  // The lease token of a claim whose transaction has not been seen to commit (after_reconnect).
  std::string unconfirmed_claim_;
  // The chat of a task completed in the open transaction that has claimed nothing since.
  std::string wake_chat_;
  // The tasks completed in the open transaction, notified after its commit (commit()).
  std::vector<std::pair<int64_t, std::string>> ended_;
  // The server time (ms) of the last look for expired leases (queue.cpp, kExpiredFirstMs).
  int64_t expired_checked_ms_ = 0;
};

}  // namespace autonous::queue
