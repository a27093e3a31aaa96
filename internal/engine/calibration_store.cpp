#include "internal/engine/calibration_store.h"

#include <algorithm>

#include "internal/tokens/scaled_counter.h"

namespace autonous::engine {

std::optional<double> calibration_wanted(double scale_used, int64_t estimated, int64_t actual) {
  if (estimated <= 0 || actual <= estimated) return std::nullopt;
  const double wanted =
      std::max(1.0, scale_used) * static_cast<double>(actual) / static_cast<double>(estimated);
  if (!(wanted <= tokens::ScaledCounter::kMaxScale)) return std::nullopt;  // implausible usage
  // One reply raises the scale at most twofold: a usage that is wrong but under the bound cannot
  // take it to the bound at once.
  return std::min(wanted, 2.0 * std::max(1.0, scale_used));
}

double calibration_applied(double stored) {
  // Below 1, NaN, or past the bound (no rule of ours writes that: an older binary's poisoned
  // row, or one written by hand): the estimate as it is.
  if (!(stored >= 1.0 && stored <= tokens::ScaledCounter::kMaxScale)) return 1.0;
  return stored;
}

}  // namespace autonous::engine
