#include "internal/engine/calibration_store.h"

#include <algorithm>
#include <cmath>

#include "internal/tokens/scaled_counter.h"

namespace autonous::engine {

std::optional<double> calibration_next(double scale_used, int64_t estimated, int64_t actual) {
  if (estimated <= 0 || actual <= 0) return std::nullopt;
  const double used = calibration_applied(scale_used);
  const double aim = used * static_cast<double>(actual) / static_cast<double>(estimated) *
                     (1.0 + kCalibrationMargin);
  if (!(aim >= tokens::ScaledCounter::kMinScale && aim <= tokens::ScaledCounter::kMaxScale))
    return std::nullopt;  // implausible usage
  // Up at once, at most twofold: a usage that is wrong but under the bound cannot take it to the
  // bound in one reply. Down part of the way: one short prompt's ratio does not decide.
  const double next =
      aim > used ? std::min(aim, 2.0 * used) : used - (used - aim) * kCalibrationLowerShare;
  if (std::abs(next - used) < kCalibrationStep) return std::nullopt;
  return std::clamp(next, tokens::ScaledCounter::kMinScale, tokens::ScaledCounter::kMaxScale);
}

double calibration_applied(double stored) {
  if (!(stored >= tokens::ScaledCounter::kMinScale && stored <= tokens::ScaledCounter::kMaxScale))
    return 1.0;
  return stored;
}

}  // namespace autonous::engine
