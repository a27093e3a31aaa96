#pragma once
// FakeClock: a common::Clock that tests move by hand. With a step, every now() call first
// advances it by that step, so code that waits for time (a retry's backoff, a lease) sees it
// pass at once, without a real sleep. Thread-safe.

#include <atomic>
#include <chrono>

#include "internal/common/clock.h"

namespace autonous::testing {

class FakeClock final : public common::Clock {
 public:
  explicit FakeClock(common::TimePoint start = common::from_unix_ms(1'700'000'000'000),
                     std::chrono::milliseconds step = std::chrono::milliseconds(0))
      : now_ms_(common::to_unix_ms(start)), step_ms_(step.count()) {}

  common::TimePoint now() const override {
    return common::from_unix_ms(now_ms_.fetch_add(step_ms_) + step_ms_);
  }
  void advance(std::chrono::milliseconds d) noexcept { now_ms_ += d.count(); }

 private:
  mutable std::atomic<int64_t> now_ms_;
  int64_t step_ms_;
};

}  // namespace autonous::testing
