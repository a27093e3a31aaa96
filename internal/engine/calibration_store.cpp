#include "internal/engine/calibration_store.h"

#include <algorithm>

namespace autonous::engine {

std::optional<double> calibration_wanted(double scale_used, int64_t estimated, int64_t actual) {
  if (estimated <= 0 || actual <= estimated) return std::nullopt;
  return std::max(1.0, scale_used) * static_cast<double>(actual) / static_cast<double>(estimated);
}

}  // namespace autonous::engine
