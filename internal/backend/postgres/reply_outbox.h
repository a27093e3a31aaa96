#pragma once
// The reply webhook's outbox on PostgreSQL (queue/reply_outbox.h): reply_delivery and
// reply_outbox (migrations/postgres/0020). Claims skip rows another worker has locked; times are
// the server's clock, Unix ms.

#include "internal/queue/reply_outbox.h"

namespace autonous::db::pg {
class Connection;
}

namespace autonous::queue {

class PgOutbox final : public ReplyOutbox {
 public:
  explicit PgOutbox(db::pg::Connection& c) : c_(c) {}
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
  bool fenced(const std::string& sql, const std::vector<std::optional<std::string>>& params,
              const events::Event& event);
  db::pg::Connection& c_;
};

}  // namespace autonous::queue
