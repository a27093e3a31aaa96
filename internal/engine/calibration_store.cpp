#include "internal/engine/calibration_store.h"

#include <algorithm>

#include "internal/tokens/scaled_counter.h"

namespace autonous::engine {

std::optional<double> calibration_wanted(double scale_used, int64_t estimated, int64_t actual) {
  if (estimated <= 0 || actual <= estimated) return std::nullopt;
  const double wanted =
      std::max(1.0, scale_used) * static_cast<double>(actual) / static_cast<double>(estimated);
  if (!(wanted <= tokens::ScaledCounter::kMaxScale)) return std::nullopt;  // implausible usage
  return wanted;
}

double calibration_applied(double stored) {
  if (!(stored >= 1.0)) return 1.0;  // NaN too
  return std::min(stored, tokens::ScaledCounter::kMaxScale);
}

}  // namespace autonous::engine
