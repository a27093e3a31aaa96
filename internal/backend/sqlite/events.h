#pragma once
// The event log on SQLite: appending and reading events (events/event_log.h) and the
// statistics of `autonous stats` (events/event_stats.h). Payloads are JSON object text, so
// `json_extract` always works on them.

#include <cstdint>
#include <vector>

#include "internal/events/event_log.h"
#include "internal/events/event_stats.h"

namespace SQLite {
class Database;
}
namespace autonous::db {
class StatementCache;
}

namespace autonous::events {

// Inserts `event` and returns its id. Throws std::invalid_argument when the payload is not a
// JSON object, SQLite::Exception on database errors.
int64_t append(SQLite::Database& db, const Event& event);
// The same through a connection's statement cache (the worker's hot path).
int64_t append(db::StatementCache& cache, const Event& event);
// Events matching `filter`, oldest first.
std::vector<StoredEvent> query(SQLite::Database& db, const EventFilter& filter);

// One row per (model, token_counter), most calls first.
std::vector<EstimateStats> estimate_stats(SQLite::Database& db, const StatsFilter& filter);
CompressionStats compression_stats(SQLite::Database& db, const StatsFilter& filter);
std::vector<CostStats> cost_stats(SQLite::Database& db, const StatsFilter& filter);

}  // namespace autonous::events
