#include "internal/tokens/scaled_counter.h"

#include <cmath>
#include <limits>

namespace autonous::tokens {

int64_t ScaledCounter::count_text(std::string_view text) const {
  if (checkpoint_) checkpoint_();
  const int64_t n = inner_->count_text(text);
  if (checkpoint_) checkpoint_();
  if (scale_ == 1.0) return n;
  const double scaled = std::ceil(static_cast<double>(n) * scale_);
  // Saturates a quarter below INT64_MAX, so the framing and sums added to a count cannot overflow.
  constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max() / 4;
  if (scaled >= static_cast<double>(kSaturated)) return kSaturated;
  return static_cast<int64_t>(scaled);
}

}  // namespace autonous::tokens
