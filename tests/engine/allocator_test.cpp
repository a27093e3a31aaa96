// The allocator (allocator.h): how much of the budget recall's evidence may take.
#include "internal/engine/allocator.h"

#include <gtest/gtest.h>

namespace autonous::engine {
namespace {

TEST(Allocator, LongTermChatsReserveTheShareMinusTheSummaryCappedAtMaxTokens) {
  AllocationInput in;
  in.budget = 4000;
  in.fixed = 100;
  in.long_term = false;
  EXPECT_EQ(evidence_reserve(in), 0);  // a short chat: all to the recent history
  in.long_term = true;
  EXPECT_EQ(evidence_reserve(in), 1755);  // 0.45 × 3 900
  in.summary = 500;
  EXPECT_EQ(evidence_reserve(in), 1255);  // the summary takes its part of long-term memory
  in.summary = 5000;
  EXPECT_EQ(evidence_reserve(in), 0);
  in.summary = 0;
  in.budget = 100'000;
  EXPECT_EQ(evidence_reserve(in), 3000);  // RECALL_MAX_TOKENS
  in.recall.enabled = false;
  EXPECT_EQ(evidence_reserve(in), 0);
}

}  // namespace
}  // namespace autonous::engine
