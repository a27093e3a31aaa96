#pragma once
// The reply webhook's outbox on SQLite (queue/reply_outbox.h): reply_delivery and reply_outbox
// (migrations/sqlite/0020). Times are SQLite's clock, Unix ms.

#include "internal/queue/reply_outbox.h"

namespace SQLite {
class Database;
}

namespace autonous::queue {

class SqliteOutbox final : public ReplyOutbox {
 public:
  explicit SqliteOutbox(SQLite::Database& db) : db_(db) {}
  void keep_webhook_on(std::chrono::milliseconds span) override;
  void set_notify(bool notify) override;
  std::vector<OutboxRow> claim(std::chrono::milliseconds lease, int limit) override;
  bool delivered(const OutboxRow& row, const events::Event& event) override;
  bool retry(const OutboxRow& row, std::chrono::milliseconds delay, const std::string& error,
             const events::Event& event) override;
  bool give_up(const OutboxRow& row, const std::string& error, const events::Event& event) override;
  int64_t pending(bool due) override;
  std::optional<std::chrono::milliseconds> next_due() override;

 private:
  SQLite::Database& db_;
};

}  // namespace autonous::queue
