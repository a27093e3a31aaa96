#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::db {
namespace {

std::mutex& write_gate() noexcept {
  static std::mutex gate;
  return gate;
}

}  // namespace

WriteTransaction::WriteTransaction(SQLite::Database& db)
    : gate_(write_gate()), tx_(db, SQLite::TransactionBehavior::IMMEDIATE) {}

}  // namespace autonous::db
