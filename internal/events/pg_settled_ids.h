#pragma once
// SettledIds: on PostgreSQL, event ids are given out at insert and transactions commit in any
// order, so a gap in the ids a follower has read may still fill (an insert not committed yet) or
// never will (it rolled back). This tells them apart without waiting out a timeout per gap: it
// takes a checkpoint (the newest visible id and the next transaction id, in one snapshot), and
// once every transaction older than the checkpoint has ended, no event at or below its id can
// appear any more: those ids are settled. A transaction left open (a psql session) holds the
// checkpoint back; give_up() then settles it anyway (the follower's bounded wait).

#include <cstdint>

namespace autonous::db::pg {
class Connection;
}

namespace autonous::events {

class SettledIds {
 public:
  explicit SettledIds(db::pg::Connection& c) : c_(c) {}

  // One query: settles the pending checkpoint when its transactions have all ended (taking the
  // next one then). Returns the settled id: no event at or below it can still appear.
  int64_t poll();
  // Settles the pending checkpoint without waiting for its transactions.
  void give_up() noexcept;
  int64_t settled() const noexcept { return settled_; }
  // The newest id visible at the pending checkpoint (0 before the first poll).
  int64_t pending() const noexcept { return pending_id_; }

 private:
  db::pg::Connection& c_;
  int64_t settled_ = 0;
  int64_t pending_id_ = 0;
  int64_t pending_xid_ = 0;  // the snapshot's xmax: the first transaction not yet begun
};

}  // namespace autonous::events
