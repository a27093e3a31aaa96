// fitted_budget: the budget an overflow answer teaches, from the window it states and the
// server's count of the refused prompt, or a share of the refused budget when it states none.

#include "internal/worker/turn.h"

#include <gtest/gtest.h>

#include "internal/openai/overflow.h"

namespace autonous::worker {
namespace {

TEST(FittedBudgetTest, TheStatedWindowWithAQuarterLeftForTheReply) {
  openai::Overflow said;
  said.limit = 2500;
  said.requested = 6000;
  // We counted 6 000 too: a quarter of 2 500 left for the reply.
  EXPECT_EQ(fitted_budget(6000, 6000, 0.6, said), 1875);
}

TEST(FittedBudgetTest, TheServersCountConvertsToOurTokens) {
  openai::Overflow said;
  said.limit = 4096;
  said.prompt = 8000;  // the server counted 8 000 where we counted 4 000 (its tokens are smaller)
  EXPECT_EQ(fitted_budget(4000, 8000, 0.6, said), 1536);  // 4096 * 0.75 / 2
  said.prompt = 2000;                                     // or twice as large
  EXPECT_EQ(fitted_budget(4000, 8000, 0.6, said), 3600);  // 6144 capped under what was sent
}

TEST(FittedBudgetTest, WithoutAStatedWindowTheTargetShareOfTheRefusedBudget) {
  const openai::Overflow said;
  EXPECT_EQ(fitted_budget(5000, 6000, 0.6, said), 3600);
}

TEST(FittedBudgetTest, AlwaysUnderWhatWasSent) {
  openai::Overflow said;
  said.limit = 100'000;  // a window larger than what was refused (the reply room was short)
  EXPECT_EQ(fitted_budget(5000, 6000, 0.6, said), 4500);
  EXPECT_GE(fitted_budget(0, 0, 0.6, openai::Overflow{}), 1);
}

}  // namespace
}  // namespace autonous::worker
