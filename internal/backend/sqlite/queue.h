#pragma once
// Queue: the SQLite backend of TaskQueue (task_queue.h).
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

#include "internal/backend/sqlite/events.h"
#include "internal/backend/sqlite/statement_cache.h"
#include "internal/common/clock.h"
#include "internal/events/event_log.h"
#include "internal/queue/task.h"
#include "internal/queue/task_queue.h"

namespace SQLite {
class Database;
}

namespace autonous::queue {

class Queue final : public TaskQueue {
 public:
  // `db` must outlive the Queue.
  explicit Queue(SQLite::Database& db) : db_(db), cache_(db) {}

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

  QueueStats stats(common::TimePoint now) override;

 private:
  // Runs `update` (bound, fenced on id + lease token) and `events` in one IMMEDIATE
  // transaction; false, writing nothing, when the fence matched no row.
  // The claim's statements; REQUIRES an open IMMEDIATE transaction and the write gate.
  std::optional<Task> claim_in_transaction(const std::string& worker_id, int64_t now_ms,
                                           std::chrono::seconds lease);

  bool fenced(const std::string& update_sql, const std::function<void(SQLite::Statement&)>& bind,
              const std::vector<events::Event>& list);

  SQLite::Database& db_;
  db::StatementCache cache_;
};

}  // namespace autonous::queue
