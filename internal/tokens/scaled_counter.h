#pragma once
// ScaledCounter: another TokenCounter's text counts times a scale (rounded up), framing
// unscaled, plus the tokens a server adds to every prompt unseen (set_added: a proxy's hidden
// prompt, learned by the calibration) in each request's framing. The estimator's calibration
// (TOKEN_CALIBRATION, on by default) applies its per-endpoint-and-model scale with it; the scale
// stays within [kMinScale, kMaxScale] (set_scale clamps; engine/calibration_store.h applies a
// stored scale outside it as 1.0) and a count saturates at INT64_MAX / 4 (framing and sums added to
// it cannot overflow). The rule that moves the stored scale is engine/calibration_store.h.

#include <functional>
#include <utility>

#include "internal/tokens/token_counter.h"

namespace autonous::tokens {

// Not thread-safe to set_scale() while counting; a worker slot owns one.
class ScaledCounter final : public TokenCounter {
 public:
  // No estimator is this far off a real tokenizer: a scale beyond it came from a usage figure
  // that was not the prompt's (calibration_next ignores such replies).
  static constexpr double kMaxScale = 8.0;
  // Nor this far above it: the estimate is at most about 2.6x a real tokenizer's count of
  // English (Llama 3, Claude), and 0.25 leaves room for prose that over-counts more.
  static constexpr double kMinScale = 0.25;
  // `inner` must outlive this counter.
  explicit ScaledCounter(const TokenCounter& inner) : inner_(&inner) {}
  // Counts with `inner` from now on (a chat with a model of its own, #31); it must outlive
  // this counter. Not while counting.
  void set_inner(const TokenCounter& inner) noexcept { inner_ = &inner; }
  const TokenCounter& inner() const noexcept { return *inner_; }
  void set_scale(double scale) noexcept {
    scale_ = scale != scale      ? 1.0
             : scale < kMinScale ? kMinScale
             : scale > kMaxScale ? kMaxScale
                                 : scale;
  }
  double scale() const noexcept { return scale_; }
  // Tokens every request costs beyond its messages (0 … 2^31; outside: 0).
  void set_added(int64_t added) noexcept {
    added_ = added >= 0 && added <= (1LL << 31) ? added : 0;
  }
  int64_t added() const noexcept { return added_; }
  // Called before and after each count while set (empty: none): a worker renews its task's
  // lease there while a build of a huge message or history counts for seconds. It may throw;
  // the exception reaches the count's caller.
  void set_checkpoint(std::function<void()> checkpoint) { checkpoint_ = std::move(checkpoint); }
  int64_t count_text(std::string_view text) const override;
  int64_t per_message() const noexcept override { return inner_->per_message(); }
  int64_t per_request() const noexcept override { return inner_->per_request() + added_; }
  std::string_view name() const noexcept override { return inner_->name(); }
  // The inner counter's counts are stored while they are not scaled (an exact counter's scale
  // stays 1: only the estimate is calibrated), and stored counts go to it.
  std::string_view stored_name() const noexcept override {
    return scale_ == 1.0 ? inner_->stored_name() : std::string_view();
  }
  void remember(std::string_view text, int64_t tokens) const override {
    inner_->remember(text, tokens);
  }

 private:
  const TokenCounter* inner_;
  double scale_ = 1.0;
  int64_t added_ = 0;
  std::function<void()> checkpoint_;
};

}  // namespace autonous::tokens
