// A Session on DATABASE_URL's PostgreSQL: one libpq connection (db::pg::Connection), which a
// server restart, a failover or a terminated session can break; reconnect() restores it.
#include "internal/backend/drivers.h"
#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/queue.h"
#include "internal/backend/postgres/stores.h"
#include "internal/store/engine_storage.h"

namespace autonous::backend {
namespace {

class PgSession final : public Session {
 public:
  explicit PgSession(const std::string& url) : c_(db::pg::Connection::open(url)), queue_(*c_) {}

  queue::TaskQueue& queue() override { return queue_; }
  std::unique_ptr<store::EngineStorage> engine_storage() override {
    return store::make_pg_storage(*c_);
  }
  bool lost() const noexcept override { return c_->broken(); }
  int64_t reconnect() override {
    c_->reconnect();
    return queue_.after_reconnect();
  }
  void check_still_there() override {}  // a server's database cannot be unlinked under us

 private:
  std::unique_ptr<db::pg::Connection> c_;
  queue::PgQueue queue_;
};

}  // namespace

std::unique_ptr<Session> open_pg_session(const std::string& url) {
  return std::make_unique<PgSession>(url);
}

}  // namespace autonous::backend
