#include "internal/worker/window_probe.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace autonous::worker {
namespace {

// A server that counts `ratio` of the raw estimate and cuts every prompt to `window`.
struct Server {
  double ratio = 0.55;
  int64_t window = 0;  // 0: none
  int64_t count(int64_t raw) const {
    const auto c = static_cast<int64_t>(ratio * static_cast<double>(raw));
    return window > 0 ? std::min(c, window) : c;
  }
};

TEST(WindowProbeTest, NothingSeenLeavesTheRawEstimatesRoom) {
  WindowProbe p;
  // Scale 1 (not lowered) or above: nothing to cap.
  EXPECT_FALSE(p.cap("k", 8000, 1.0));
  EXPECT_FALSE(p.cap("k", 8000, 1.3));
  // Lowered to 0.6: the raw estimate's 8 000 cost 4 800 now.
  EXPECT_EQ(p.cap("k", 8000, 0.6), 4800);
  EXPECT_FALSE(p.cap("k", 0, 0.6));
  EXPECT_FALSE(p.cap("k", 8000, 0.0));
}

TEST(WindowProbeTest, APromptGrowsAQuarterPastTheLargestTakenWhole) {
  WindowProbe p;
  EXPECT_FALSE(p.observe("k", 8000, 4400).window);   // taken whole (the first one is believed)
  EXPECT_EQ(p.cap("k", 8000, 0.6), 6000);            // 0.6 × 1.25 × 8 000
  EXPECT_EQ(p.cap("other", 8000, 0.6), 4800);        // per endpoint and model
  EXPECT_FALSE(p.observe("k", 10000, 5500).window);  // grew with it: taken whole
  EXPECT_EQ(p.cap("k", 8000, 0.6), 7500);
  EXPECT_FALSE(p.observe("k", 12500, 6875).window);
  EXPECT_FALSE(p.cap("k", 8000, 0.6));  // 0.6 × 15 625 ≥ 8 000: the whole budget
  // A smaller prompt proves nothing and costs nothing.
  EXPECT_TRUE(p.observe("k", 3000, 100).whole);
  EXPECT_FALSE(p.cap("k", 8000, 0.6));
}

TEST(WindowProbeTest, ACountThatStopsGrowingIsASilentWindowAfterTwoStrikes) {
  WindowProbe p;
  const Server ollama{0.55, 4096};
  // A chat that wants ever more room: each prompt as large as the probe allows.
  EXPECT_FALSE(p.observe("k", 4000, ollama.count(4000)).window);
  std::optional<int64_t> learned;
  int turns = 0;
  int cut_turns = 0;
  double worst_kept = 1.0;
  while (!learned && turns < 20) {
    const auto raw = static_cast<int64_t>(kProbeGrowth * static_cast<double>(p.proven("k")));
    const double kept = static_cast<double>(ollama.count(raw)) / (ollama.ratio * raw);
    if (kept < 0.999) ++cut_turns;
    worst_kept = std::min(worst_kept, kept);
    learned = p.observe("k", raw, ollama.count(raw)).window;
    ++turns;
  }
  ASSERT_TRUE(learned);
  EXPECT_EQ(*learned, 4096);
  // The first prompt past the window lost 5 % and looked whole; the next two were strikes.
  EXPECT_EQ(cut_turns, 3);
  // Never more cut away than the step and the shortfall allow (the 5 % cut was taken as whole).
  EXPECT_GE(worst_kept, 1.0 / (kProbeGrowth * kProbeShortfall));
  EXPECT_EQ(p.proven("k"), 7812);
}

TEST(WindowProbeTest, AStrikeNeedsAPromptThatGrewAndACountThatDidNot) {
  WindowProbe p;
  EXPECT_TRUE(p.observe("k", 10000, 5000).whole);
  // A smaller or equal prompt: taken whole, whatever its count.
  EXPECT_TRUE(p.observe("k", 10000, 4000).whole);
  // 5 % larger, the count 5 % short of the growth: within the shortfall, taken whole.
  EXPECT_TRUE(p.observe("k", 10500, 5000).whole);
  EXPECT_EQ(p.proven("k"), 10500);
  // 5 % larger again, the count not grown: short, but not grown enough to be a strike.
  for (int i = 0; i < 3; ++i) {
    const auto v = p.observe("k", 11000, 4600);
    EXPECT_FALSE(v.whole);
    EXPECT_FALSE(v.window);
  }
  // A count that grew with the prompt resets the strikes.
  EXPECT_FALSE(p.observe("k", 12000, 5000).whole);   // strike 1
  EXPECT_TRUE(p.observe("k", 12000, 5800).whole);    // 5 800 × 1.1 ≥ 5 714: taken whole
  EXPECT_FALSE(p.observe("k", 14000, 5800).window);  // strike 1 again
  const auto second = p.observe("k", 14000, 5800);
  EXPECT_FALSE(second.whole);
  EXPECT_EQ(second.window, 5800);  // strike 2: the window
  // Then the strikes start over.
  EXPECT_FALSE(p.observe("k", 14000, 5800).window);
  EXPECT_EQ(p.proven("k"), 12000);
}

TEST(WindowProbeTest, ImplausibleCountsTeachNothing) {
  WindowProbe p;
  EXPECT_FALSE(p.observe("k", 1000, 0).whole);
  EXPECT_FALSE(p.observe("k", 1000, 1).whole);
  EXPECT_FALSE(p.observe("k", 1000, 2001).whole);  // over twice the raw estimate
  EXPECT_FALSE(p.observe("k", 0, 500).whole);
  EXPECT_EQ(p.cap("k", 8000, 0.5), 4000);  // nothing proven
  EXPECT_FALSE(p.observe("k", 1000, 600).window);
  EXPECT_EQ(p.cap("k", 8000, 0.5), 4000);  // 1 250 raw < 8 000
}

}  // namespace
}  // namespace autonous::worker
