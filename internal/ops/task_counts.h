#pragma once
// TaskCounts: tasks by status for /metrics and the overview, read from the database so every
// process reports the same numbers, at a bounded cost. A count walks the status's index range
// (~54 ms per million rows), so a result is reused for 100 × the time it took to read (at least
// 1 s): a small queue is counted on every scrape, a database with ten million done tasks about
// once a minute. Counts are not kept in a table by triggers: that would add a write to every
// claim and completion, the queue's hot path. Thread-safe.

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

#include "internal/ops/page_db.h"

namespace autonous::ops {

inline constexpr std::array<const char*, 5> kStatuses = {"queued", "running", "done", "failed",
                                                         "cancelled"};
using StatusCounts = std::array<int64_t, kStatuses.size()>;

// Seconds since the oldest queued task was created (its id is the smallest: tasks_by_status);
// nullopt when none is queued.
std::optional<double> oldest_queued_age(PageDb& db);

class TaskCounts {
 public:
  // Counts in kStatuses' order, from one statement (one snapshot). Throws when the database
  // cannot be read.
  StatusCounts read(PageDb& db);

 private:
  std::mutex mu_;
  StatusCounts counts_{};
  std::chrono::steady_clock::time_point fresh_until_{};
};

}  // namespace autonous::ops
