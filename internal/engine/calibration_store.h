#pragma once
// The estimator's calibration (TOKEN_CALIBRATION=on), persisted in token_calibration: a
// per-model scale that multiplies the estimate (tokens::ScaledCounter applies it). It never goes
// below 1.0 and only rises, when the API reports more prompt tokens than were estimated. The
// rule is here; each backend stores the scale (EngineStorage::raise_calibration).

#include <cstdint>
#include <optional>

namespace autonous::engine {

// The scale that would have made `estimated` tokens (counted with `scale_used`) cover `actual`;
// nullopt when they did (actual <= estimated) or nothing was estimated.
std::optional<double> calibration_wanted(double scale_used, int64_t estimated, int64_t actual);

}  // namespace autonous::engine
