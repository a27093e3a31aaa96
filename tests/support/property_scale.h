#pragma once
// How much of a property test's random cases to run: all of them unless AUTONOUS_PROPERTY_SCALE
// (a fraction in (0, 1]) says less. scripts/test's sanitizer pass runs a quarter (the release pass
// runs every case); coverage checks ("every level reached") hold only for a full run.

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace autonous::testing {

// Throws std::invalid_argument when the variable is set but not a number in (0, 1]: a typo must
// not quietly run every case, or none.
inline double property_scale() {
  const char* s = std::getenv("AUTONOUS_PROPERTY_SCALE");
  if (s == nullptr || *s == '\0') return 1.0;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (*end != '\0' || !(v > 0 && v <= 1))
    throw std::invalid_argument(std::string("AUTONOUS_PROPERTY_SCALE must be in (0, 1]: ") + s);
  return v;
}

// `n` cases scaled, at least one.
inline int property_cases(int n) { return std::max(1, static_cast<int>(n * property_scale())); }

inline bool full_property_run() { return property_scale() >= 1.0; }

}  // namespace autonous::testing
