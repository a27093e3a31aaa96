#include "internal/engine/calibration_store.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

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

int64_t added_next(int64_t used, std::optional<int64_t> implied) {
  used = added_applied(used);
  if (!implied || *implied > kAddedMax) return used;
  const int64_t aim = *implied < kAddedMin ? 0 : *implied;
  // Part of the way (one chat's growth does not decide alone); a part under kAddedMin is none.
  int64_t next =
      used + static_cast<int64_t>(std::llround(static_cast<double>(aim - used) * kAddedShare));
  if (next < kAddedMin) next = aim >= kAddedMin ? aim : 0;
  return std::llabs(next - used) < kAddedStep ? used : next;
}

int64_t added_applied(int64_t stored) { return stored >= 0 && stored <= kAddedMax ? stored : 0; }

int64_t proven_applied(int64_t stored) { return stored >= 0 && stored <= kProvenMax ? stored : 0; }

std::optional<CalibrationMove> calibration_after(const CalibrationLesson& l) {
  const std::optional<double> scale = calibration_next(l.used.scale, l.estimated, l.actual);
  const int64_t added = added_applied(l.added);
  const int64_t used_proven = proven_applied(l.used.proven);
  const int64_t proven = std::max(proven_applied(l.proven), used_proven);
  CalibrationMove m{{scale.value_or(calibration_applied(l.used.scale)), added, proven},
                    scale.has_value(),
                    added != added_applied(l.used.added),
                    proven != used_proven};
  if (!m.scale && !m.added && !m.proven) return std::nullopt;
  return m;
}

double calibration_applied(double stored) {
  if (!(stored >= tokens::ScaledCounter::kMinScale && stored <= tokens::ScaledCounter::kMaxScale))
    return 1.0;
  return stored;
}

}  // namespace autonous::engine
