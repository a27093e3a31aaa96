#pragma once
// The estimator's calibration (TOKEN_CALIBRATION=on), persisted in token_calibration: a
// per-model scale that multiplies the estimate (tokens::ScaledCounter applies it). It never goes
// below 1.0 and only rises, when the API reports more prompt tokens than were estimated, at most
// twofold a reply, never above tokens::ScaledCounter::kMaxScale: a reply whose usage would need
// more (a usage figure near INT64_MAX, say) is implausible and ignored. The rule is here; each
// backend stores the scale (EngineStorage::raise_calibration).

#include <cstdint>
#include <optional>

namespace autonous::engine {

// The scale that would have made `estimated` tokens (counted with `scale_used`) cover `actual`;
// nullopt when they did (actual <= estimated), when nothing was estimated, and when that scale
// would exceed tokens::ScaledCounter::kMaxScale (implausible usage, ignored). At most twice
// `scale_used` (one reply cannot take it to the bound at once).
std::optional<double> calibration_wanted(double scale_used, int64_t estimated, int64_t actual);

// A stored scale as it applies: itself within [1.0, tokens::ScaledCounter::kMaxScale]; 1.0
// otherwise (a row an older binary raised past the bound on a poisoned usage, or one written by
// hand: NaN, below 1).
double calibration_applied(double stored);

}  // namespace autonous::engine
