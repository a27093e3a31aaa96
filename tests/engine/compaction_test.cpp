// Compaction planning: the marks each strategy gets, when a compaction happens, where it moves
// the start (low mark, target, floor, a user message), and the guards that keep it from
// happening on every turn.

#include "internal/engine/compaction.h"

#include <gtest/gtest.h>

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

ContextSettings settings(int window, int keep = 6) {
  ContextSettings s;
  s.history_window = window;
  s.keep_recent_messages = keep;
  return s;
}

struct Chat {
  std::vector<Message> messages;
  std::vector<int64_t> cost;
  void add(int n, int64_t tokens) {
    for (int i = 0; i < n; ++i) {
      const auto id = static_cast<int64_t>(messages.size()) + 1;
      messages.push_back({id % 2 ? Role::kUser : Role::kAssistant, "m", id});
      cost.push_back(tokens);
    }
  }
  CutInput input(Marks marks, int64_t budget = 10'000, int64_t goal = 6'000) const {
    CutInput in;
    in.messages = messages;
    in.cost = cost;
    in.fixed_tokens = 100;
    in.budget_tokens = budget;
    in.goal_tokens = goal;
    in.marks = marks;
    return in;
  }
};

TEST(CompactionTest, MarksPerStrategy) {
  ContextPolicy p;
  Marks m = count_marks(settings(100), p);  // token_budget
  EXPECT_EQ(m.high, 100);
  EXPECT_EQ(m.low, 60);
  EXPECT_EQ(m.floor, 6);
  p.strategy = Strategy::kSlidingWindow;
  p.recent_messages = 20;
  m = count_marks(settings(100), p);
  EXPECT_EQ(m.high, 60);
  EXPECT_EQ(m.low, 20);
  m = count_marks(settings(20), p);  // a window no wider than N: room to grow all the same
  EXPECT_EQ(m.high, 20);
  EXPECT_EQ(m.low, 12);
  p.strategy = Strategy::kTokenBudget;
  p.thresholds.target = 1.0;  // a target of 1 would keep the high mark: at most 0.8 of it
  EXPECT_EQ(count_marks(settings(100), p).low, 80);
  EXPECT_EQ(count_marks(settings(100, 500), p).floor, 80);  // the floor is at most the low mark
}

TEST(CompactionTest, UnderTheMarksNothingMoves) {
  Chat c;
  c.add(100, 10);  // exactly the high mark, 1 000 of 10 000 tokens
  const Cut cut = plan_cut(c.input(count_marks(settings(100), ContextPolicy{})));
  EXPECT_EQ(cut.reason, CompactionReason::kNone);
  EXPECT_EQ(cut.first, 0u);
}

TEST(CompactionTest, OverTheHighMarkTheStartMovesToTheLowMarkOnAUserMessage) {
  Chat c;
  c.add(101, 10);
  const Cut cut = plan_cut(c.input(count_marks(settings(100), ContextPolicy{})));
  EXPECT_EQ(cut.reason, CompactionReason::kWindow);
  EXPECT_LE(c.messages.size() - cut.first, 60u);  // 60, or 59 to start on a user message
  EXPECT_GE(c.messages.size() - cut.first, 59u);
  EXPECT_EQ(c.messages[cut.first].role, Role::kUser);
}

TEST(CompactionTest, OverWarnTheStartMovesToTheTargetButNeverIntoTheFloor) {
  Chat c;
  c.add(20, 500);  // 10 000 + 100 of 10 000: over warn
  Cut cut = plan_cut(c.input(count_marks(settings(100), ContextPolicy{})));
  EXPECT_EQ(cut.reason, CompactionReason::kThreshold);
  EXPECT_EQ(c.messages.size() - cut.first, 12u);  // 6 000 tokens of 500
  // The floor (6 messages of 1 500) alone stays over warn: no compaction, it would come back
  // on every turn; the prompt grows until the last resort, over the budget.
  Chat big;
  big.add(20, 1500);
  cut = plan_cut(big.input(count_marks(settings(100), ContextPolicy{})));
  EXPECT_EQ(cut.reason, CompactionReason::kNone);
  EXPECT_EQ(cut.first, 0u);
}

TEST(CompactionTest, ATokenCompactionLandsOnTheUserMessageNearestItsGoal) {
  // Exchanges of a short question (30) and a long answer (700): stepping forward to the first
  // user message under the goal (6 000) would keep 8 exchanges, 5 840 tokens... and one exchange
  // less when the goal falls just past a question.
  Chat c;
  for (int i = 0; i < 14; ++i) {
    c.messages.push_back({Role::kUser, "q", static_cast<int64_t>(c.messages.size()) + 1});
    c.cost.push_back(30);
    c.messages.push_back({Role::kAssistant, "a", static_cast<int64_t>(c.messages.size()) + 1});
    c.cost.push_back(700);
  }
  auto kept = [&](const Cut& cut) {
    int64_t k = 0;
    for (size_t i = cut.first; i < c.cost.size(); ++i) k += c.cost[i];
    return k;
  };
  // Goal 5 860: 8 exchanges (5 840) are just under it.
  Cut cut = plan_cut(c.input(count_marks(settings(100), ContextPolicy{}), 10'000, 5'860));
  EXPECT_EQ(cut.reason, CompactionReason::kThreshold);
  EXPECT_EQ(kept(cut), 5'840);
  // Goal 6 300: 8 exchanges are 460 under it, 9 (6 570) only 270 over: the nearer, under soft.
  cut = plan_cut(c.input(count_marks(settings(100), ContextPolicy{}), 10'000, 6'300));
  EXPECT_EQ(kept(cut), 6'570);
  EXPECT_EQ(c.messages[cut.first].role, Role::kUser);
  // The same under a budget where 9 exchanges would pass the soft threshold: 8.
  cut = plan_cut(c.input(count_marks(settings(100), ContextPolicy{}), 9'200, 6'300));
  EXPECT_EQ(kept(cut), 5'840);
}

TEST(CompactionTest, TheCutIsPlannedWithTheSizesThePromptWillCarry) {
  // 40 messages of 150 tokens but every fourth one is 2 000, which the normal level cuts to 500:
  // planned with the uncut sizes the goal (6 000) holds a few messages; with the carried ones,
  // most of them.
  Chat c;
  c.add(40, 150);
  std::vector<int64_t> carried = c.cost;
  for (size_t i = 0; i < c.cost.size(); i += 4) {
    c.cost[i] = 2000;
    carried[i] = 500;
  }
  CutInput in = c.input(count_marks(settings(100), ContextPolicy{}), 10'000, 6'000);
  const Cut uncut = plan_cut(in);
  in.carried = carried;
  const Cut planned = plan_cut(in);
  EXPECT_EQ(uncut.reason, CompactionReason::kThreshold);
  EXPECT_EQ(planned.reason, CompactionReason::kThreshold);
  EXPECT_LT(planned.first, uncut.first);
  int64_t kept = 0;
  for (size_t i = planned.first; i < carried.size(); ++i) kept += carried[i];
  EXPECT_LE(kept, 6'000 + 500);  // near the goal, by the carried sizes
  EXPECT_GE(kept, 6'000 - 600);
  // The next turn (what was kept and one exchange more) does not compact again: the trigger
  // counts the carried sizes too (by the uncut ones the kept part is still over warn).
  Chat next;
  std::vector<int64_t> next_carried;
  for (size_t i = planned.first; i < c.messages.size(); ++i) {
    next.messages.push_back(c.messages[i]);
    next.cost.push_back(c.cost[i]);
    next_carried.push_back(carried[i]);
  }
  next.add(2, 150);
  next_carried.insert(next_carried.end(), {150, 150});
  CutInput again = next.input(count_marks(settings(100), ContextPolicy{}), 10'000, 6'000);
  again.carried = next_carried;
  EXPECT_EQ(plan_cut(again).reason, CompactionReason::kNone);
}

TEST(CompactionTest, AnOverflowCompactsWhateverTheUsage) {
  Chat c;
  c.add(10, 10);
  CutInput in = c.input(count_marks(settings(100), ContextPolicy{}));
  in.overflow = true;
  const Cut cut = plan_cut(in);
  EXPECT_EQ(cut.reason, CompactionReason::kOverflow);
  EXPECT_EQ(cut.first, 0u);  // 10 messages are under the low mark and the goal: nothing leaves
}

TEST(CompactionTest, TheStartLooksBackForAUserMessageRatherThanDropTheFloor) {
  Chat c;
  c.add(40, 10);
  for (int i = 0; i < 8; ++i) {  // the newest eight are all assistant messages
    c.messages.push_back({Role::kAssistant, "a", static_cast<int64_t>(c.messages.size()) + 1});
    c.cost.push_back(10);
  }
  Marks marks = count_marks(settings(40), ContextPolicy{});
  const Cut cut = plan_cut(c.input(marks));
  ASSERT_EQ(cut.reason, CompactionReason::kWindow);
  ASSERT_LT(cut.first, c.messages.size());
  EXPECT_EQ(c.messages[cut.first].role, Role::kUser);
  EXPECT_GE(c.messages.size() - cut.first, 8u);
}

}  // namespace
}  // namespace autonous::engine
