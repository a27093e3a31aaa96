#pragma once
// SettledIds: on PostgreSQL, event ids are given out at insert and transactions commit in any
// order, so a gap in the ids a follower has read may still fill (an insert not committed yet) or
// never will (it rolled back). This tells them apart without waiting out a timeout per gap: a
// checkpoint is the newest visible id and a transaction id of the follower's own, taken in one
// statement (pg_current_xact_id(): larger than that of every transaction that had written by
// then); once the server's oldest running transaction (the snapshot's xmin) is newer than it,
// every transaction that could hold an id at or below the checkpoint has ended: those ids are
// settled. Any transaction left open on the server (in any database, a prepared one too) holds
// the checkpoint back; give_up() then settles it anyway (the follower's bounded wait). Not
// covered: an insert whose transaction gets its id an instant before its first write assigns
// its transaction id, descheduled across the whole checkpoint. A checkpoint costs a transaction
// id; a poll that settles nothing costs none. On a hot standby, which assigns no transaction
// ids, nothing settles but by give_up(), which then passes every id visible at the last poll.

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
  // Settles the pending checkpoint without waiting for its transactions; the next poll takes a
  // new one.
  void give_up() noexcept;
  int64_t settled() const noexcept { return settled_; }
  // The newest id visible at the pending checkpoint (0 before the first poll).
  int64_t pending() const noexcept { return pending_id_; }
  // The server is a hot standby (found at a poll): only give_up() settles.
  bool standby() const noexcept { return standby_; }

 private:
  db::pg::Connection& c_;
  int64_t settled_ = 0;
  int64_t pending_id_ = 0;
  int64_t pending_xid_ = -1;  // the checkpoint's own transaction id; -1 none taken
  bool standby_ = false;      // the server assigns no transaction ids
};

}  // namespace autonous::events
