#pragma once
// The estimator's calibration (TOKEN_CALIBRATION=on), persisted in token_calibration: a
// per-model scale that multiplies the estimate (tokens::ScaledCounter applies it). It never goes
// below 1.0 and only rises, when the API reports more prompt tokens than were estimated.

#include <cstdint>
#include <optional>
#include <string>

namespace SQLite {
class Database;
}

namespace autonous::store {

// The scale that would have made `estimated` tokens (counted with `scale_used`) cover `actual`;
// nullopt when they did (actual <= estimated) or nothing was estimated.
std::optional<double> calibration_wanted(double scale_used, int64_t estimated, int64_t actual);

// The stored scale of `model`, 1.0 when there is none. Throws SQLite::Exception.
double calibration_scale(SQLite::Database& db, const std::string& model);

// Raises the scale of `model` so that `estimated` tokens (made with `scale_used`) would have
// covered `actual`. No-op when actual <= estimated. Returns the scale now stored.
// Throws SQLite::Exception.
double raise_calibration(SQLite::Database& db, const std::string& model, double scale_used,
                         int64_t estimated, int64_t actual);

}  // namespace autonous::store
