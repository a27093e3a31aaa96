#include "internal/common/clock.h"

namespace autonous::common {

int64_t to_unix_ms(TimePoint t) noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TimePoint from_unix_ms(int64_t ms) noexcept {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

}  // namespace autonous::common
