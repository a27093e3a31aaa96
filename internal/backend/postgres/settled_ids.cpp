#include "internal/backend/postgres/settled_ids.h"

#include <algorithm>

#include "internal/backend/postgres/connection.h"

namespace autonous::events {

int64_t SettledIds::poll() {
  if (standby_) {  // no checkpoints: give_up() passes what is visible now
    pending_id_ = c_.query("SELECT coalesce(max(id), 0) FROM events").int64(0, 0);
    return settled_;
  }
  // One statement, one snapshot: the newest committed id, the oldest transaction still running
  // (xmin; the snapshot's xmax when none), and, only when the pending checkpoint is settled
  // (CASE evaluates it lazily), a transaction id of this statement's own for the next one.
  static const std::string kCheckpoint =
      "SELECT coalesce((SELECT max(id) FROM events), 0), s.xmin, "
      "CASE WHEN s.xmin > $1 THEN pg_current_xact_id()::text::bigint END "
      "FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin) AS s";
  int64_t newest = 0, own = -1;
  try {
    const db::pg::Result r = c_.query(kCheckpoint, {db::pg::param(pending_xid_)});
    newest = r.int64(0, 0);
    if (r.int64(0, 1) <= pending_xid_) return settled_;
    own = r.int64(0, 2);
  } catch (const db::pg::PgError& e) {
    if (e.sqlstate() != "25006") throw;  // "cannot execute pg_current_xact_id() during recovery"
    standby_ = true;
    return poll();
  }
  settled_ = std::max(settled_, pending_id_);
  pending_id_ = newest;
  pending_xid_ = own;
  return settled_;
}

void SettledIds::give_up() noexcept {
  settled_ = std::max(settled_, pending_id_);
  pending_xid_ = -1;
}

}  // namespace autonous::events
