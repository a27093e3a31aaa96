#pragma once
// The drivers behind session.h, one per backend; only open_session and open_listener
// (session.cpp) call them.

#include <memory>
#include <string>

#include "internal/backend/session.h"

namespace autonous::backend {

// DB_PATH's SQLite file (sqlite_session.cpp).
std::unique_ptr<Session> open_sqlite_session(const config::Config& config);

// DATABASE_URL's PostgreSQL (pg_session.cpp, pg_listener.cpp).
std::unique_ptr<Session> open_pg_session(const std::string& url);
std::unique_ptr<Listener> open_pg_listener(const std::string& url, Wake wake, int slots);

}  // namespace autonous::backend
