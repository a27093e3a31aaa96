#pragma once
// ScaledCounter: another TokenCounter's text counts times a scale (rounded up), framing
// unscaled. The estimator's calibration (TOKEN_CALIBRATION=on) applies its per-model scale with
// it; the scale never goes below 1.0. The stored scale lives in internal/store/calibration_store.

#include "internal/tokens/token_counter.h"

namespace autonous::tokens {

// Not thread-safe to set_scale() while counting; a worker slot owns one.
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

}  // namespace autonous::tokens
