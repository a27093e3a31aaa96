#include "internal/tokens/scaled_counter.h"

#include <cmath>
#include <limits>

namespace autonous::tokens {

int64_t ScaledCounter::count_text(std::string_view text) const {
  const int64_t n = inner_.count_text(text);
  if (scale_ == 1.0) return n;
  const double scaled = std::ceil(static_cast<double>(n) * scale_);
  // 2^63 is the first double past INT64_MAX: a count that large saturates.
  if (scaled >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(scaled);
}

}  // namespace autonous::tokens
