#include "internal/tokens/scaled_counter.h"

#include <cmath>

namespace autonous::tokens {

int64_t ScaledCounter::count_text(std::string_view text) const {
  const int64_t n = inner_.count_text(text);
  if (scale_ == 1.0) return n;
  return static_cast<int64_t>(std::ceil(static_cast<double>(n) * scale_));
}

}  // namespace autonous::tokens
