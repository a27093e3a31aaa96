#pragma once
// WriteTransaction: the one way autonous writes. It takes the process's write gate (a mutex),
// then BEGIN IMMEDIATE; the destructor rolls back unless commit() ran. Threads of one process
// queue on the gate, in order, instead of sleeping in SQLite's busy handler; only processes
// compete for the file lock. Hold it for the transaction only, never across other I/O.

#include <mutex>

#include <SQLiteCpp/Transaction.h>

namespace SQLite {
class Database;
}

namespace autonous::db {

class WriteTransaction {
 public:
  // Throws SQLite::Exception when BEGIN IMMEDIATE fails (busy past the timeout). `db` must
  // outlive the transaction.
  explicit WriteTransaction(SQLite::Database& db);
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

  // Throws SQLite::Exception when COMMIT fails (the transaction is then rolled back).
  void commit() { tx_.commit(); }

 private:
  std::lock_guard<std::mutex> gate_;  // first in, last out: released after the rollback
  SQLite::Transaction tx_;
};

}  // namespace autonous::db
