#pragma once
// Clock: the one seam for "now". Production uses SystemClock; tests use a fake.
// Lower layers take `now` as an argument instead of reading a clock. Thread-safe.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace autonous::common {

using TimePoint = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::system_clock::now(); }
};

// Milliseconds since the Unix epoch: how the queue stores run_after and lease expiry.
int64_t to_unix_ms(TimePoint t) noexcept;
TimePoint from_unix_ms(int64_t ms) noexcept;

// "2026-11-28T21:43:58.123Z" (how both backends write created_at and finished_at: UTC, any
// number of fraction digits, the Z optional) as a time; nullopt when it is not one.
std::optional<TimePoint> parse_utc(std::string_view iso) noexcept;

}  // namespace autonous::common
