#include "internal/events/pg_settled_ids.h"

#include <algorithm>

#include "internal/db/pg_connection.h"

namespace autonous::events {

int64_t SettledIds::poll() {
  if (standby_) return settled_;
  // One statement, one snapshot: the newest committed id, the oldest transaction still running
  // (xmin; the snapshot's xmax when none), and a transaction id of this statement's own.
  static const std::string kCheckpoint =
      "SELECT coalesce((SELECT max(id) FROM events), 0), "
      "pg_snapshot_xmin(pg_current_snapshot())::text::bigint, "
      "pg_current_xact_id()::text::bigint";
  int64_t newest = 0, xmin = 0, own = 0;
  try {
    const db::pg::Result r = c_.query(kCheckpoint);
    newest = r.int64(0, 0);
    xmin = r.int64(0, 1);
    own = r.int64(0, 2);
  } catch (const db::pg::PgError& e) {
    if (e.sqlstate() != "25006") throw;  // "cannot execute pg_current_xact_id() during recovery"
    standby_ = true;
    return settled_;
  }
  if (pending_xid_ < 0 || xmin > pending_xid_) {
    settled_ = std::max(settled_, pending_id_);
    pending_id_ = newest;
    pending_xid_ = own;
  }
  return settled_;
}

void SettledIds::give_up() noexcept {
  settled_ = std::max(settled_, pending_id_);
  pending_xid_ = -1;
}

}  // namespace autonous::events
