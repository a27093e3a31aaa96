#pragma once
// The estimator's calibration (TOKEN_CALIBRATION, on by default), persisted in
// token_calibration per endpoint and model: a scale that multiplies the estimate
// (tokens::ScaledCounter applies it) so that it lands just above what the server counts. After
// each answer with a usage figure the scale moves toward the one that would have made the
// estimate kCalibrationMargin above the server's count: up at once (at most twofold a reply),
// down by kCalibrationLowerShare of the way (an over-count is safe, an under-count is not). It
// stays within [tokens::ScaledCounter::kMinScale, kMaxScale]: a reply whose usage would need a
// scale outside them (a usage figure near INT64_MAX, or 1) is implausible and ignored. The rule
// is here; each backend stores the scale (EngineStorage::calibrate).

#include <cstdint>
#include <optional>

namespace autonous::engine {

// The estimate is aimed this much above the server's count.
inline constexpr double kCalibrationMargin = 0.05;
// A lowering moves this share of the way to its aim each reply.
inline constexpr double kCalibrationLowerShare = 2.0 / 3.0;
// Moves smaller than this are not written.
inline constexpr double kCalibrationStep = 0.005;
// A prompt whose messages' text is estimated under this many tokens teaches nothing: text the
// server adds unseen (a gateway's system prompt, a template's date lines) would be most of it.
inline constexpr int64_t kCalibrationMinTokens = 200;

// The scale after the API counted `actual` prompt tokens for a prompt estimated at `estimated`
// with `scale_used`; nullopt when it stays (nothing estimated or counted, a move below
// kCalibrationStep, an implausible usage).
std::optional<double> calibration_next(double scale_used, int64_t estimated, int64_t actual);

// A stored scale as it applies: itself within [kMinScale, kMaxScale]; 1.0 otherwise (a row
// written by hand or an older binary's poisoned one: NaN, 0, 2.9e17).
double calibration_applied(double stored);

}  // namespace autonous::engine
