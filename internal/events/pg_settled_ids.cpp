#include "internal/events/pg_settled_ids.h"

#include <algorithm>

#include "internal/db/pg_connection.h"

namespace autonous::events {

int64_t SettledIds::poll() {
  // One statement, one snapshot: the newest committed id, the oldest transaction still running
  // (xmin) and the next one to begin (xmax). An id allocated before max(id) was allocated
  // belongs to a transaction that had begun by then (xid < xmax).
  const db::pg::Result r = c_.query(
      "SELECT coalesce((SELECT max(id) FROM events), 0), "
      "pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint "
      "FROM pg_current_snapshot() AS s");
  const int64_t newest = r.int64(0, 0);
  const int64_t xmin = r.int64(0, 1);
  const int64_t xmax = r.int64(0, 2);
  if (xmin >= pending_xid_) {
    settled_ = std::max(settled_, pending_id_);
    pending_id_ = newest;
    pending_xid_ = xmax;
  }
  return settled_;
}

void SettledIds::give_up() noexcept { settled_ = std::max(settled_, pending_id_); }

}  // namespace autonous::events
