#include "internal/backend/session.h"

#include <stdexcept>
#include <utility>

#include "internal/backend/drivers.h"
#include "internal/config/config.h"

namespace autonous::backend {

// Config refuses DATABASE_URL together with DB_PATH: one of the two is the database.
std::unique_ptr<Session> open_session(const config::Config& config) {
  if (!config.database_url.empty()) return open_pg_session(config.database_url);
  return open_sqlite_session(config);
}

std::unique_ptr<Listener> open_listener(const config::Config& config, Wake wake, int slots) {
  if (!wake) throw std::invalid_argument("open_listener: no wake callback");
  if (!config.database_url.empty())
    return open_pg_listener(config.database_url, std::move(wake), slots);
  return nullptr;
}

}  // namespace autonous::backend
