#include "internal/backend/postgres/reply_outbox.h"

#include <algorithm>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/events.h"

namespace autonous::queue {
namespace {

using db::pg::param;

#define PG_NOW_MS "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
const std::string kDue =
    "gave_up_at IS NULL AND next_at <= " PG_NOW_MS " AND lease_until <= " PG_NOW_MS;

}  // namespace

void PgOutbox::keep_webhook_on(std::chrono::milliseconds span) {
  // A read first: a worker that moves nothing writes nothing (a read-only standby answers it).
  // The time moves when less than half the span is left.
  const db::pg::Result left =
      c_.query("SELECT webhook_until - " PG_NOW_MS " FROM reply_delivery WHERE id = 1");
  if (left.rows() == 1 && left.int64(0, 0) > span.count() / 2) return;
  c_.query("UPDATE reply_delivery SET webhook_until = greatest(webhook_until, " PG_NOW_MS
           " + $1) WHERE id = 1",
           {param(static_cast<int64_t>(span.count()))});
}

void PgOutbox::set_notify(bool notify) {
  const db::pg::Result now = c_.query("SELECT notify FROM reply_delivery WHERE id = 1");
  if (now.rows() == 1 && (now.text(0, 0) == "t") == notify) return;
  c_.query("UPDATE reply_delivery SET notify = $1 WHERE id = 1",
           {param(notify ? "true" : "false")});
}

std::vector<OutboxRow> PgOutbox::claim(std::chrono::milliseconds lease, int limit) {
  const db::pg::Result r =
      c_.query("UPDATE reply_outbox o SET attempts = o.attempts + 1, lease_until = " PG_NOW_MS
               " + $1 FROM (SELECT id FROM reply_outbox WHERE " +
                   kDue +
                   " ORDER BY next_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) due WHERE o.id = due.id "
                   "RETURNING o.id, o.task_id, o.chat_id, o.status, o.body, o.attempts",
               {param(static_cast<int64_t>(lease.count())), param(static_cast<int64_t>(limit))});
  std::vector<OutboxRow> rows;
  for (int i = 0; i < r.rows(); ++i)
    rows.push_back({r.int64(i, 0), r.int64(i, 1), r.text(i, 2), r.text(i, 3), r.text(i, 4),
                    static_cast<int>(r.int64(i, 5))});
  std::sort(rows.begin(), rows.end(),
            [](const OutboxRow& a, const OutboxRow& b) { return a.id < b.id; });
  return rows;
}

bool PgOutbox::fenced(const std::string& sql, const std::vector<std::optional<std::string>>& params,
                      const events::Event& event) {
  db::pg::Transaction tx(c_);
  if (c_.query(sql, params).affected() != 1) return false;
  events::append(c_, event);
  tx.commit();
  return true;
}

bool PgOutbox::delivered(const OutboxRow& row, const events::Event& event) {
  return fenced("DELETE FROM reply_outbox WHERE id = $1 AND attempts = $2",
                {param(row.id), param(static_cast<int64_t>(row.attempts))}, event);
}

bool PgOutbox::retry(const OutboxRow& row, std::chrono::milliseconds delay,
                     const std::string& error, const events::Event& event) {
  return fenced("UPDATE reply_outbox SET next_at = " PG_NOW_MS
                " + $1, lease_until = 0, last_error = $2 WHERE id = $3 AND attempts = $4",
                {param(static_cast<int64_t>(delay.count())), param(error), param(row.id),
                 param(static_cast<int64_t>(row.attempts))},
                event);
}

bool PgOutbox::give_up(const OutboxRow& row, const std::string& error, const events::Event& event) {
  return fenced(
      "UPDATE reply_outbox SET gave_up_at = autonous_now(), lease_until = 0, "
      "last_error = $1 WHERE id = $2 AND attempts = $3",
      {param(error), param(row.id), param(static_cast<int64_t>(row.attempts))}, event);
}

int64_t PgOutbox::pending(bool due) {
  return c_
      .query(due ? "SELECT count(*) FROM reply_outbox WHERE " + kDue
                 : std::string("SELECT count(*) FROM reply_outbox WHERE gave_up_at IS NULL"))
      .int64(0, 0);
}

std::optional<std::chrono::milliseconds> PgOutbox::next_due() {
  const db::pg::Result r = c_.query("SELECT min(greatest(next_at, lease_until)) - " PG_NOW_MS
                                    " FROM reply_outbox WHERE gave_up_at IS NULL");
  if (r.is_null(0, 0)) return std::nullopt;  // (greatest() would skip the NULL of no rows)
  return std::chrono::milliseconds(std::max<int64_t>(0, r.int64(0, 0)));
}

#undef PG_NOW_MS

}  // namespace autonous::queue
