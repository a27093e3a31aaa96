#include "internal/worker/backoff.h"

#include <algorithm>

namespace autonous::worker {

std::chrono::milliseconds backoff_delay(int attempt, std::chrono::milliseconds base,
                                        std::chrono::milliseconds max,
                                        std::optional<std::chrono::milliseconds> retry_after,
                                        std::mt19937_64& rng) {
  using std::chrono::milliseconds;
  if (retry_after) return std::clamp(*retry_after, milliseconds(0), kMaxRetryAfter);
  const int doublings = std::clamp(attempt - 1, 0, 30);
  const double raw =
      static_cast<double>(base.count()) * static_cast<double>(int64_t{1} << doublings);
  const double capped = std::min(raw, static_cast<double>(max.count()));
  std::uniform_real_distribution<double> jitter(0.75, 1.0);
  return milliseconds(static_cast<int64_t>(capped * jitter(rng)));
}

}  // namespace autonous::worker
