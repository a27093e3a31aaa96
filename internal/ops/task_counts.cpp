#include "internal/ops/task_counts.h"

#include <algorithm>
#include <ctime>

namespace autonous::ops {

std::optional<double> oldest_queued_age(PageDb& db) {
  const Rows r =
      db.query("SELECT created_at FROM tasks WHERE status = 'queued' ORDER BY id LIMIT 1");
  if (r.empty()) return std::nullopt;
  const std::optional<double> created = unix_seconds(r.text(0, 0));
  if (!created) return 0.0;  // a hand-written time that is none
  return std::max(0.0, db.now() - *created);
}

StatusCounts TaskCounts::read(PageDb& db) {
  const std::lock_guard lock(mu_);  // one reader counts; the others wait for its result
  const auto started = std::chrono::steady_clock::now();
  if (started < fresh_until_) return counts_;
  // One statement, one snapshot: a task changing status meanwhile is counted once. Each count
  // walks its status's range of tasks_by_status.
  std::string sql = "SELECT ";
  for (size_t i = 0; i < kStatuses.size(); ++i)
    sql += std::string(i > 0 ? ", " : "") + "(SELECT count(*) FROM tasks WHERE status = '" +
           kStatuses[i] + "')";
  const Rows r = db.query(sql);
  StatusCounts out{};
  for (size_t i = 0; i < kStatuses.size(); ++i) out[i] = r.int64(0, static_cast<int>(i));
  const auto took = std::chrono::steady_clock::now() - started;
  counts_ = out;
  fresh_until_ =
      started + std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1), 100 * took);
  return out;
}

}  // namespace autonous::ops
