#pragma once
// A process's PostgreSQL connections, shared by its sessions (a worker's slots, its main
// thread): a pooled db::pg::Connection borrows one for each statement, or for a whole
// transaction, and gives it back (connection.h). A slot talks to the database only to claim,
// build and complete a task, and waits on the LLM for most of a turn, so a few connections
// serve many slots: N processes of M slots take N x (DATABASE_POOL_SIZE + 1) server
// connections (the +1: each process's LISTEN connection), not N x (M + 1). Connections are
// opened as they are needed, up to the size, and reused newest first; one that broke is closed
// and another opened in its place; one the server ended while it sat idle is noticed before it
// is lent. A borrower waits while all are lent: at most kPoolWait, then PgError 53300 (a
// transient error: the worker backs off and tries again). Thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace autonous::db::pg {

class Connection;

inline constexpr std::chrono::seconds kPoolWait{30};

class Pool {
 public:
  // `wait`: how long take() waits for a connection when all are lent.
  Pool(std::string url, int size, std::chrono::milliseconds wait = kPoolWait);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // One process-wide pool per URL (the first caller's size wins).
  static std::shared_ptr<Pool> shared(const std::string& url, int size);

  // A connection for the caller alone until it gives it back. Throws PgError when none can be
  // opened, and (53300) after waiting kPoolWait for one.
  std::unique_ptr<Connection> take();
  // Back into the pool (idle, not in a transaction).
  void give(std::unique_ptr<Connection> c);
  // Closes `c` (broken, or left in a transaction): its place is free for a new one. `retire`:
  // the server may be gone or changed (a restart, a failover, a standby), so every connection
  // opened before `c` is closed too, as it comes back or before it is lent (one to a dead host
  // can look idle and sound).
  void drop(std::unique_ptr<Connection> c, bool retire = false);
  // The same for every connection open now, without one in hand.
  void retire();

  int size() const noexcept { return size_; }
  const std::string& url() const noexcept { return url_; }
  int open_now();  // connections open (lent and idle): for tests

 private:
  const std::string url_;
  const int size_;
  const std::chrono::milliseconds wait_;
  std::mutex m_;
  std::condition_variable freed_;
  struct Idle {
    std::unique_ptr<Connection> c;
    uint64_t generation;  // generation_ when it was opened
  };
  std::vector<Idle> idle_;
  int open_ = 0;                                // lent + idle + being opened
  std::map<const Connection*, uint64_t> lent_;  // lent ones, by the generation they were opened in
  uint64_t generation_ = 0;                     // how many broken connections were dropped
};

}  // namespace autonous::db::pg
