#pragma once
// The drivers' entry points behind session.h and copy.h, one set per backend; only the
// seam's openers (session.cpp) call them.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "internal/backend/copy.h"
#include "internal/backend/session.h"

namespace autonous::backend {

// DB_PATH's SQLite file (sqlite/session.cpp).
std::unique_ptr<Session> open_sqlite_session(const config::Config& config,
                                             const OpenOptions& options);
std::unique_ptr<ops::PageDb> open_sqlite_page_db(const config::Config& config, bool need_write);

// DATABASE_URL's PostgreSQL (postgres/session.cpp, postgres/listener.cpp).
// `pool_size`: the process's pool for `url` (postgres/pool.h), made by its first session.
std::unique_ptr<Session> open_pg_session(const std::string& url, int pool_size,
                                         const OpenOptions& options);
std::unique_ptr<ops::PageDb> open_pg_page_db(const std::string& url);
std::unique_ptr<Listener> open_pg_listener(const std::string& url, Wake wake, int slots);
std::unique_ptr<EndingWatch> open_pg_ending_watch(const std::string& url);

// `autonous copy`: the source read from a SQLite file (sqlite/copy_source.cpp), written into
// the PostgreSQL database at `url`, migrated first (postgres/copy.cpp).
std::unique_ptr<CopySource> open_sqlite_copy_source(const std::string& path,
                                                    std::chrono::milliseconds busy_timeout);
std::vector<CopiedTable> copy_into_pg(CopySource& from, const std::string& url);
std::string redact_pg_url(const std::string& url);

}  // namespace autonous::backend
