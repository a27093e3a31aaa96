#include "internal/backend/session.h"

#include <algorithm>
#include <stdexcept>
#include <thread>
#include <utility>

#include "internal/backend/drivers.h"
#include "internal/config/config.h"
#include "internal/ops/page_db.h"

namespace autonous::backend {

// Config refuses DATABASE_URL together with DB_PATH: one of the two is the database.
std::unique_ptr<Session> open_session(const config::Config& config, const OpenOptions& options) {
  if (!config.database_url.empty())
    return open_pg_session(config.database_url, config.database_pool_size, options);
  return open_sqlite_session(config, options);
}

std::unique_ptr<ops::PageDb> open_page_db(const config::Config& config, bool need_write) {
  if (!config.database_url.empty()) return open_pg_page_db(config.database_url);
  return open_sqlite_page_db(config, need_write);
}

std::optional<int> connection_pool_size(const config::Config& config) {
  if (!config.database_url.empty()) return config.database_pool_size;
  return std::nullopt;
}

std::unique_ptr<Listener> open_listener(const config::Config& config, Wake wake, int slots) {
  if (!wake) throw std::invalid_argument("open_listener: no wake callback");
  if (!config.database_url.empty())
    return open_pg_listener(config.database_url, std::move(wake), slots);
  return nullptr;
}

namespace {

// SQLite: a cheap poll of the task's row.
class PollingWatch final : public EndingWatch {
 public:
  explicit PollingWatch(std::chrono::milliseconds step) : step_(step) {}
  void wait(std::chrono::milliseconds timeout) override {
    std::this_thread::sleep_for(std::min(timeout, step_));
  }

 private:
  std::chrono::milliseconds step_;
};

}  // namespace

std::unique_ptr<EndingWatch> watch_endings(const config::Config& config) {
  if (!config.database_url.empty()) {
    try {
      return open_pg_ending_watch(config.database_url);
    } catch (const std::exception&) {
      return std::make_unique<PollingWatch>(std::chrono::milliseconds(500));
    }
  }
  return std::make_unique<PollingWatch>(std::chrono::milliseconds(100));
}

CopyResult copy_deployment(const config::Config& config, const std::string& from,
                           const std::string& to_url) {
  const std::string to = to_url.empty() ? config.database_url : to_url;
  if (to.empty()) throw TargetRefused("give a postgresql:// URL (or set DATABASE_URL)");
  if (!to.starts_with("postgresql://") && !to.starts_with("postgres://"))
    throw TargetRefused("must be a postgresql:// URL");
  const std::unique_ptr<CopySource> source =
      open_sqlite_copy_source(from, config.sqlite_busy_timeout);
  CopyResult out;
  out.target = redact_pg_url(to);
  out.tables = copy_into_pg(*source, to);
  return out;
}

}  // namespace autonous::backend
