#include "internal/ops/task_counts.h"

#include <algorithm>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

namespace autonous::ops {

std::optional<double> oldest_queued_age(SQLite::Database& db) {
  SQLite::Statement age(db,
                        "SELECT max(0, (julianday('now') - julianday(created_at)) * 86400.0) "
                        "FROM tasks WHERE status = 'queued' ORDER BY id LIMIT 1");
  if (!age.executeStep()) return std::nullopt;
  return age.getColumn(0).getDouble();
}

std::array<int64_t, 4> TaskCounts::read(SQLite::Database& db) {
  const std::lock_guard lock(mu_);  // one reader counts; the others wait for its result
  const auto started = std::chrono::steady_clock::now();
  if (started < fresh_until_) return counts_;
  SQLite::Statement count(db, "SELECT count(*) FROM tasks WHERE status = ?");  // tasks_by_status
  std::array<int64_t, 4> out{};
  db.exec("BEGIN");  // one snapshot: a task changing status between two counts is counted once
  try {
    for (size_t i = 0; i < kStatuses.size(); ++i) {
      count.bind(1, kStatuses[i]);
      count.executeStep();
      out[i] = count.getColumn(0).getInt64();
      count.reset();
    }
    db.exec("COMMIT");
  } catch (...) {
    db.exec("ROLLBACK");
    throw;
  }
  const auto took = std::chrono::steady_clock::now() - started;
  counts_ = out;
  fresh_until_ =
      started + std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1), 100 * took);
  return out;
}

}  // namespace autonous::ops
