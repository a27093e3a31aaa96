#include "internal/tokens/scaled_counter.h"

#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "internal/common/message.h"
#include "internal/tokens/memo_counter.h"

namespace autonous::tokens {
namespace {

TEST(ScaledCounterTest, ScaledCounterMultipliesTextNotFramingWithinItsBounds) {
  const CharsOver4Counter inner(3, 3);
  ScaledCounter c(inner);
  EXPECT_EQ(c.count_text(std::string(40, 'a')), 10);
  c.set_scale(1.25);
  EXPECT_EQ(c.count_text(std::string(40, 'a')), 13);  // ceil(12.5)
  EXPECT_EQ(c.per_message(), 3);
  c.set_scale(0.5);
  EXPECT_EQ(c.scale(), 0.5);
  EXPECT_EQ(c.count_text(std::string(40, 'a')), 5);
  c.set_scale(0.01);
  EXPECT_EQ(c.scale(), ScaledCounter::kMinScale);
  c.set_scale(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(c.scale(), 1.0);
  EXPECT_EQ(c.name(), "chars4");
}

TEST(ScaledCounterTest, WhatTheServerAddsIsInEveryRequestsFramingNotInTheText) {
  const CharsOver4Counter inner(3, 3);
  ScaledCounter c(inner);
  c.set_scale(0.5);
  c.set_added(1000);
  EXPECT_EQ(c.added(), 1000);
  EXPECT_EQ(c.per_request(), 1003);
  EXPECT_EQ(c.per_message(), 3);
  EXPECT_EQ(c.count_text(std::string(40, 'a')), 5);  // the text alone, scaled
  c.set_added(-1);                                   // out of range: none
  EXPECT_EQ(c.per_request(), 3);
  c.set_added(int64_t{1} << 40);
  EXPECT_EQ(c.added(), 0);
}

// A counter whose every text counts `n`.
class FixedCounter final : public TokenCounter {
 public:
  explicit FixedCounter(int64_t n) : n_(n) {}
  int64_t count_text(std::string_view) const override { return n_; }
  int64_t per_message() const noexcept override { return 3; }
  int64_t per_request() const noexcept override { return 3; }
  std::string_view name() const noexcept override { return "fixed"; }

 private:
  int64_t n_;
};

// Counts are stored (migration 0018) only while they are the inner counter's own: at scale 1.
TEST(ScaledCounterTest, ItsCountsAreStoredUnderTheInnerNameOnlyUnscaled) {
  const MemoCounter memo(std::make_unique<CharsOver4Counter>(3, 3));
  ScaledCounter c(memo);
  EXPECT_EQ(c.stored_name(), "chars4@1");
  const std::string text(200, 'a');
  c.remember(text, 7);  // reaches the memo
  EXPECT_EQ(c.count_text(text), 7);
  c.set_scale(2.0);
  EXPECT_EQ(c.stored_name(), "");
  EXPECT_EQ(c.count_text(text), 14);
  const CharsOver4Counter plain(3, 3);
  EXPECT_EQ(ScaledCounter(plain).stored_name(), "");  // the estimate's are never stored
}

TEST(ScaledCounterTest, TheScaleIsBoundedAndACountSaturatesInsteadOfOverflowing) {
  const FixedCounter inner(100);
  ScaledCounter c(inner);
  c.set_scale(2.9e17);  // a poisoned stored scale
  EXPECT_EQ(c.scale(), ScaledCounter::kMaxScale);
  EXPECT_EQ(c.count_text("x"), 800);
  c.set_scale(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(c.scale(), 1.0);
  c.set_scale(std::numeric_limits<double>::infinity());
  EXPECT_EQ(c.scale(), ScaledCounter::kMaxScale);
  const FixedCounter huge(std::numeric_limits<int64_t>::max() / 2);
  ScaledCounter h(huge);
  h.set_scale(ScaledCounter::kMaxScale);
  const int64_t saturated = h.count_text("x");
  EXPECT_EQ(saturated, std::numeric_limits<int64_t>::max() / 4);  // not negative
  EXPECT_GT(h.count_message(common::Message(common::Role::kUser, "x", 0)), saturated);  // no wrap
}

TEST(ScaledCounterTest, ACheckpointRunsAroundEachCountAndItsExceptionReachesTheCaller) {
  const FixedCounter inner(100);
  ScaledCounter c(inner);
  int calls = 0;
  c.set_checkpoint([&calls] { ++calls; });
  EXPECT_EQ(c.count_text("a"), 100);
  EXPECT_EQ(c.count_text("b"), 100);
  EXPECT_EQ(calls, 4);  // before and after each: a long count renews the lease when it ends
  c.set_checkpoint([] { throw std::runtime_error("stop"); });
  EXPECT_THROW(c.count_text("c"), std::runtime_error);
  c.set_checkpoint({});
  EXPECT_EQ(c.count_text("d"), 100);
}

}  // namespace
}  // namespace autonous::tokens
