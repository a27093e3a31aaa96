#pragma once
// Estimator calibration (TOKEN_CALIBRATION=on): a per-model scale, persisted in
// token_calibration, that multiplies the estimate. It never goes below 1.0 and only rises, when
// the API reports more prompt tokens than were estimated. ScaledCounter applies it.

#include <string>

#include "internal/context/token_counter.h"

namespace SQLite {
class Database;
}

namespace autonous::context {

// The stored scale of `model`, 1.0 when there is none.
double calibration_scale(SQLite::Database& db, const std::string& model);

// Raises the scale of `model` so that `estimated` tokens (made with `scale_used`) would have
// covered `actual`. No-op when actual <= estimated. Returns the scale now stored.
double raise_calibration(SQLite::Database& db, const std::string& model, double scale_used,
                         int64_t estimated, int64_t actual);

// `inner`'s text counts times a scale (rounded up); framing unscaled. Not thread-safe to
// set_scale() while counting; a worker slot owns one.
class ScaledCounter final : public TokenCounter {
 public:
  // `inner` must outlive this counter.
  explicit ScaledCounter(const TokenCounter& inner) : inner_(inner) {}
  void set_scale(double scale) noexcept { scale_ = scale < 1.0 ? 1.0 : scale; }
  double scale() const noexcept { return scale_; }
  int64_t count_text(std::string_view text) const override;
  int64_t per_message() const noexcept override { return inner_.per_message(); }
  int64_t per_request() const noexcept override { return inner_.per_request(); }
  std::string_view name() const noexcept override { return inner_.name(); }

 private:
  const TokenCounter& inner_;
  double scale_ = 1.0;
};

}  // namespace autonous::context
