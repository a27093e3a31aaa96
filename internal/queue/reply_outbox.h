#pragma once
// ReplyOutbox: the reply webhook's outbox (#32), whichever database holds it. A task that ends
// (done, failed, cancelled) while the webhook is on leaves a row holding the JSON body to POST,
// written by the migration's trigger in the transaction that ended the task. Any worker claims
// due rows for a short lease, POSTs them (worker/reply_webhook.h) and reports back: delivered
// (the row goes, with reply.delivered), failed for now (tried again later, with
// reply.delivery_failed) or given up (kept with gave_up_at, reply.delivery_failed final).
// Reports are fenced on the claim's attempt number: a worker whose lease ran out changes
// nothing. Times are the database's clock (one clock for every worker).
// Not thread-safe: one per connection.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/events/event_log.h"

namespace autonous::queue {

struct OutboxRow {
  int64_t id = 0;
  int64_t task_id = 0;
  std::string chat_id;
  std::string status;  // the ending the body reports
  std::string body;
  int attempts = 0;  // counting this claim
};

class ReplyOutbox {
 public:
  virtual ~ReplyOutbox() = default;
  // Endings leave outbox rows for at least `span` from now (a worker with a webhook says so
  // every minute; none ever turns it off for the others). Writes only when it moves the time.
  virtual void keep_webhook_on(std::chrono::milliseconds span) = 0;
  // PostgreSQL: whether endings NOTIFY autonous_task_ended (TASK_ENDED_NOTIFY); SQLite: nothing.
  // Writes only when it changes.
  virtual void set_notify(bool notify) = 0;
  // Up to `limit` rows due now, oldest first, each leased for `lease` and its attempt counted.
  virtual std::vector<OutboxRow> claim(std::chrono::milliseconds lease, int limit) = 0;
  // The row was delivered: removed, with `event`. False when the claim was lost.
  virtual bool delivered(const OutboxRow& row, const events::Event& event) = 0;
  // The attempt failed: tried again `delay` from now, with `event`.
  virtual bool retry(const OutboxRow& row, std::chrono::milliseconds delay,
                     const std::string& error, const events::Event& event) = 0;
  // Undeliverable: kept with gave_up_at for the operator, with `event`.
  virtual bool give_up(const OutboxRow& row, const std::string& error,
                       const events::Event& event) = 0;
  // Rows still to deliver (not given up); `due`: of them, those that may be tried now.
  virtual int64_t pending(bool due = false) = 0;
  // How long until the next row still to deliver may be tried (0: now); nullopt when none is.
  virtual std::optional<std::chrono::milliseconds> next_due() = 0;
};

}  // namespace autonous::queue
