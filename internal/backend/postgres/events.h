#pragma once
// The event log on PostgreSQL: as on SQLite (backend/sqlite/events.h), but `payload` is jsonb,
// so a payload reads back with jsonb's key order, and a \u0000 escape (which jsonb refuses) is
// stored as \ufffd. Throw std::invalid_argument for a payload that is not an object,
// db::pg::PgError otherwise.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/events/event_log.h"
#include "internal/events/event_stats.h"

namespace autonous::db::pg {
class Connection;
}

namespace autonous::events {

int64_t append(db::pg::Connection& c, const Event& event);
// Appends `list` in one statement, ids ascending in its order (a transaction's trail).
void append_all(db::pg::Connection& c, const std::vector<Event>& list);
// append_all's statement ($1..$6), inserting nothing unless the SQL condition `only_if` holds,
// and its parameters for `list` (checked as append_all checks them), for a caller that makes it
// a part of a statement of its own.
std::string append_all_statement(const std::string& only_if);
std::vector<std::optional<std::string>> append_all_params(const std::vector<Event>& list);
std::vector<StoredEvent> query(db::pg::Connection& c, const EventFilter& filter);
std::vector<EstimateStats> estimate_stats(db::pg::Connection& c, const StatsFilter& filter);
CompressionStats compression_stats(db::pg::Connection& c, const StatsFilter& filter);
std::vector<CostStats> cost_stats(db::pg::Connection& c, const StatsFilter& filter);

}  // namespace autonous::events
