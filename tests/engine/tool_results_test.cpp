// Old tool results cleared at a compaction (tool_results.h): which ones, and through the builder
// that a compaction clears them before it drops anything and that the prompt then only grows at
// its end until the next compaction.

#include "internal/engine/tool_results.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/engine/assembler.h"
#include "internal/engine/context_builder.h"
#include "internal/engine/context_report.h"
#include "internal/engine/level_compressor.h"
#include "internal/tokens/token_counter.h"
#include "tests/engine/vector_provider.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

Message result(int64_t id, size_t bytes, const std::string& call = "c") {
  Message m(Role::kTool, std::string(bytes, 'r'), id);
  m.tool_call_id = call;
  return m;
}

TEST(ToolResultsTest, TheNewestThreeAtOrBelowTheMarkAndShortOnesStay) {
  const std::vector<Message> m = {{Role::kUser, std::string(900, 'u'), 1},
                                  result(2, 900),
                                  result(3, 100),  // short: never cleared
                                  result(4, 900),
                                  result(5, 900),
                                  result(6, 900),
                                  result(7, 900),
                                  result(8, 900)};  // above the mark
  EXPECT_EQ(results_to_clear(m, 7), (std::vector<char>{0, 1, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(results_to_clear(m, 8), (std::vector<char>{0, 1, 0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(results_to_clear(m, 0), std::vector<char>(8, 0));
  EXPECT_EQ(results_to_clear(m, 4), std::vector<char>(8, 0));  // 2, 3, 4: the newest three
}

TEST(ToolResultsTest, AStubSaysHowLongTheResultWas) {
  Message m = result(1, 5000);
  clear_result(m);
  EXPECT_EQ(m.content,
            "[tool result cleared to save room: 5000 bytes; call the tool again if it is needed]");
  EXPECT_EQ(m.tool_call_id, "c");
}

class ToolResultsBuildTest : public ::testing::Test {
 protected:
  // A turn that called a tool: the question, the call, its result, the answer.
  void add_turn(int i, size_t result_bytes) {
    const std::string call = "call_" + std::to_string(i);
    const int64_t id = static_cast<int64_t>(provider_.history.size()) + 1;
    provider_.history.emplace_back(Role::kUser, "question " + std::to_string(i), id);
    Message asked(Role::kAssistant, "", id + 1);
    asked.tool_calls =
        nlohmann::json::array({{{"id", call},
                                {"type", "function"},
                                {"function", {{"name", "lookup"}, {"arguments", "{}"}}}}})
            .dump();
    provider_.history.push_back(asked);
    provider_.history.push_back(result(id + 2, result_bytes, call));
    provider_.history.emplace_back(Role::kAssistant, "answer " + std::to_string(i), id + 3);
  }
  BuiltContext build(const std::string& user) {
    ContextSettings s;
    s.system_prompt = "sys";
    s.history_window = 200;
    s.policy.max_tokens = 4000;  // an oversized message: over 250 tokens
    return ContextBuilder(s, provider_, compressor_, assembler_, counter_).build("c", user);
  }
  VectorProvider provider_;
  tokens::CharsOver4Counter counter_;
  LevelCompressor compressor_{counter_};
  StandardAssembler assembler_;
};

TEST_F(ToolResultsBuildTest, ACompactionClearsOldResultsBeforeItDropsAnyMessage) {
  // 16 results of 225 tokens (under the oversized cap: no cut would shrink them): over the warn
  // threshold. Clearing all but the newest three meets the target, so nothing is dropped.
  for (int i = 0; i < 16; ++i) add_turn(i, 900);
  const BuiltContext built = build("next");
  EXPECT_EQ(built.state.compaction, CompactionReason::kThreshold);
  EXPECT_EQ(built.figures.dropped_count, 0);
  EXPECT_LE(built.figures.estimated_tokens, 4000);
  ASSERT_EQ(built.figures.tool_results_cleared.size(), 13u);
  EXPECT_EQ(built.figures.tool_results_cleared.front(), "call_0");
  EXPECT_EQ(built.figures.tool_results_cleared.back(), "call_12");
  int whole = 0;
  for (const Message& m : built.messages) {
    if (m.role == Role::kAssistant && m.content.empty()) {
      EXPECT_FALSE(m.tool_calls.empty());
    }
    if (m.role != Role::kTool) continue;
    if (m.content == std::string(900, 'r')) {
      ++whole;
    } else {
      EXPECT_EQ(m.content.rfind("[tool result cleared", 0), 0u) << m.content;
    }
  }
  EXPECT_EQ(whole, 3);
  const nlohmann::json event = nlohmann::json::parse(figures_json(built));
  EXPECT_EQ(event["tool_results_cleared"]["count"], 13);
  EXPECT_EQ(event["tool_results_cleared"]["ids"].front(), "call_0");

  // The next turns carry the same: a fourth-newest result stays whole until the next compaction,
  // so the earlier prompt (but its question) is the new one's prefix.
  add_turn(16, 900);
  const BuiltContext next = build("again");
  EXPECT_EQ(next.state.compaction, CompactionReason::kNone);
  EXPECT_EQ(next.figures.tool_results_cleared.size(), 13u);
  for (size_t i = 0; i + 1 < built.messages.size(); ++i)
    EXPECT_EQ(next.messages[i].content, built.messages[i].content) << i;
}

TEST_F(ToolResultsBuildTest, ALaterCompactionClearsWhatCameSinceAndStillDropsNothing) {
  // The review's case: after a first compaction for tokens every oversized message is cut as it
  // enters, so a second one that clearing alone meets must still move the mark (before, it did
  // not: nothing was cleared, and the last resort dropped turns).
  for (int i = 0; i < 16; ++i) add_turn(i, 900);
  const BuiltContext first = build("next");
  ASSERT_EQ(first.state.compaction, CompactionReason::kThreshold);
  ASSERT_EQ(first.figures.tool_results_cleared.size(), 13u);
  int turn = 16;
  BuiltContext later;
  do {
    add_turn(turn++, 900);
    later = build("again " + std::to_string(turn));
  } while (later.state.compaction == CompactionReason::kNone && turn < 60);
  EXPECT_EQ(later.state.compaction, CompactionReason::kThreshold);
  EXPECT_EQ(later.figures.dropped_count, 0);
  // At warn, by the plan: not by the last resort once over the budget.
  EXPECT_EQ(later.figures.level, Level::kNormal);
  EXPECT_FALSE(later.figures.hard_truncated);
  EXPECT_EQ(later.figures.tool_results_cleared.size(), static_cast<size_t>(turn - 3));
  EXPECT_EQ(later.state.after.cut_through, provider_.history.back().history_id);
  EXPECT_LE(later.figures.estimated_tokens, 4000);
}

TEST_F(ToolResultsBuildTest, WithoutAnyCompactionEveryResultIsCarriedWhole) {
  for (int i = 0; i < 5; ++i) add_turn(i, 900);
  const BuiltContext built = build("next");
  EXPECT_EQ(built.state.compaction, CompactionReason::kNone);
  EXPECT_TRUE(built.figures.tool_results_cleared.empty());
  for (const Message& m : built.messages) {
    if (m.role == Role::kTool) {
      EXPECT_EQ(m.content, std::string(900, 'r'));
    }
  }
}

}  // namespace
}  // namespace autonous::engine
