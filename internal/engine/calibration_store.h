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
//
// Beside the scale, the tokens the server adds to every prompt unseen (a proxy's or a gateway's
// own system prompt): a scale alone fits such a part as a multiple of the text, and the estimate
// of a long prompt then lands far above the server's count. A chat's growth judged whole implies
// the part (worker/window_probe.h: the count minus the chat's slope times its size); the stored
// part moves kAddedShare of the way to it, either way (a chat whose text counts differently
// turn by turn implies some noise; an added part too low is not unsafe, as the scale is fitted
// to each count without the part, so the estimate at the current size stays right), and the
// scale is fitted to the count without it. ScaledCounter adds it to every request's framing.

#include <cstdint>
#include <optional>

namespace autonous::engine {

// A calibration as stored for an endpoint and model.
struct Calibration {
  double scale = 1.0;  // of the text's estimate
  int64_t added = 0;   // tokens the server adds to every prompt unseen
  // The largest prompt (in raw estimate tokens) the server was seen to take whole
  // (worker/window_probe.h: how far a model of unknown window is trusted), kept so that a
  // restarted worker, or another process, need not prove it again; 0: none.
  int64_t proven = 0;
};

// One answer's lesson: the API counted `actual` tokens of text for a prompt whose text was
// estimated at `estimated` with `used`; the added part (added_next's) and the proven size (the
// probe's) after it.
struct CalibrationLesson {
  Calibration used;
  int64_t estimated = 0;
  int64_t actual = 0;
  int64_t added = 0;
  int64_t proven = 0;
};

// What a backend stores after `lesson`: the parts that move — the scale moved by
// calibration_next, the added part, a larger proven size — and their values (`to`; a part that
// does not move has the value `used` had). A backend writes only the parts that moved: the last
// answer's move of a part wins (one another slot made meanwhile was computed from an older
// prompt), a part this answer did not move stays as another slot left it, and the proven size
// only grows.
struct CalibrationMove {
  Calibration to;
  bool scale = false;
  bool added = false;
  bool proven = false;
};
// nullopt when nothing moves.
std::optional<CalibrationMove> calibration_after(const CalibrationLesson& lesson);

// An implied added part under this is none (what the framing or a count's rounding leaves).
inline constexpr int64_t kAddedMin = 64;
// Nor is one above this (no hidden prompt is that long: a count that was not the prompt's).
inline constexpr int64_t kAddedMax = 32768;
// Moves of the added part smaller than this are not written.
inline constexpr int64_t kAddedStep = 16;
// The share of the way to an implied part a judgement moves the stored one.
inline constexpr double kAddedShare = 0.5;

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

// The added part after a chat's growth judged whole implied `implied` tokens (nullopt: nothing
// implied): `used` when it stays (no implication, an implausible one, a move under kAddedStep).
int64_t added_next(int64_t used, std::optional<int64_t> implied);

// A stored added part as it applies: itself within [0, kAddedMax]; 0 otherwise.
int64_t added_applied(int64_t stored);

// A stored proven size as it applies: itself within [0, kProvenMax]; 0 otherwise.
inline constexpr int64_t kProvenMax = int64_t{1} << 31;
int64_t proven_applied(int64_t stored);

// A stored scale as it applies: itself within [kMinScale, kMaxScale]; 1.0 otherwise (a row
// written by hand or an older binary's poisoned one: NaN, 0, 2.9e17).
double calibration_applied(double stored);

}  // namespace autonous::engine
