#include "internal/engine/tool_units.h"

#include <gtest/gtest.h>

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

Message call(const std::string& text, const std::string& calls, int64_t id) {
  Message m{Role::kAssistant, text, id};
  m.tool_calls = calls;
  return m;
}

Message result(const std::string& text, const std::string& call_id, int64_t id) {
  Message m{Role::kTool, text, id};
  m.tool_call_id = call_id;
  return m;
}

const char* kTwoCalls =
    R"([{"id":"a","type":"function","function":{"name":"order","arguments":"{}"}},)"
    R"({"id":"b","type":"function","function":{"name":"stock","arguments":"{\"sku\":1}"}}])";

TEST(ToolUnitsTest, AWholeUnitStaysAsItIsInAnyOrderOfResults) {
  std::vector<Message> h = {{Role::kUser, "where is my order?", 1},
                            call("", kTwoCalls, 2),
                            result("stock: 3", "b", 3),
                            result("shipped", "a", 4),
                            {Role::kAssistant, "It has shipped.", 5}};
  const std::vector<Message> before = h;
  pair_tool_units(h);
  EXPECT_EQ(h, before);
}

TEST(ToolUnitsTest, WithoutToolsOfferedAUnitIsTextAndItsResultsOneUserMessage) {
  // Anthropic and Bedrock refuse tool blocks in a request that defines no tools; roles still
  // alternate for a strict chat template.
  std::vector<Message> h = {{Role::kUser, "where is my order?", 1},
                            call("", kTwoCalls, 2),
                            result("stock: 3", "b", 3),
                            result("shipped", "a", 4),
                            {Role::kAssistant, "It has shipped.", 5},
                            {Role::kUser, "thanks", 6}};
  pair_tool_units(h, /*tools_offered=*/false);
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(h[1].role, Role::kAssistant);
  EXPECT_EQ(h[1].content, "[called tools: order, stock]");
  EXPECT_TRUE(h[1].tool_calls.empty());
  EXPECT_EQ(h[2].role, Role::kUser);
  EXPECT_EQ(h[2].content, std::string(kToolOutputHeader) + "stock: 3\n\n" +
                              std::string(kToolOutputHeader) + "shipped");
  EXPECT_EQ(h[2].history_id, 3);
  EXPECT_EQ(h[3].content, "It has shipped.");
  for (const Message& m : h) {
    EXPECT_NE(m.role, Role::kTool);
    EXPECT_TRUE(m.tool_calls.empty());
  }
}

TEST(ToolUnitsTest, ResultsBeforeTheFirstOtherMessageAreLeftOut) {
  // The read window began inside a unit: its call is not in this history.
  std::vector<Message> h = {result("shipped", "a", 4),
                            result("stock", "b", 5),
                            {Role::kAssistant, "It has shipped.", 6},
                            {Role::kUser, "thanks", 7}};
  pair_tool_units(h);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].history_id, 6);
}

TEST(ToolUnitsTest, AnOrphanOrAFrontEndsToolRowIsMarkedUserText) {
  std::vector<Message> h = {{Role::kUser, "look it up", 1},
                            {Role::kTool, R"({"status":"shipped"})", 2},  // no call id
                            result("late", "zz", 3),                      // answers no call
                            {Role::kAssistant, "done", 4}};
  pair_tool_units(h);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[1].role, Role::kUser);
  EXPECT_EQ(h[1].content, std::string(kToolOutputHeader) + R"({"status":"shipped"})");
  EXPECT_EQ(h[2].role, Role::kUser);
  EXPECT_EQ(h[2].tool_call_id, "zz");  // kept: no history starts on it
}

TEST(ToolUnitsTest, ABrokenUnitLosesItsCallsAndItsResultsBecomeText) {
  // A result missing, a result answering another call, calls that are not JSON, a repeated id.
  for (const std::vector<Message>& broken :
       {std::vector<Message>{call("", kTwoCalls, 2), result("shipped", "a", 3)},
        std::vector<Message>{call("", kTwoCalls, 2), result("x", "a", 3), result("y", "c", 4)},
        std::vector<Message>{call("", kTwoCalls, 2), result("x", "a", 3), result("y", "a", 4)},
        std::vector<Message>{call("let me check", "not json", 2), result("x", "a", 3)},
        std::vector<Message>{call("", R"([{"type":"function"}])", 2), result("x", "a", 3)}}) {
    std::vector<Message> h = {{Role::kUser, "q", 1}};
    h.insert(h.end(), broken.begin(), broken.end());
    pair_tool_units(h);
    SCOPED_TRACE(broken[0].tool_calls);
    EXPECT_TRUE(h[1].tool_calls.empty());
    EXPECT_FALSE(h[1].content.empty());
    for (size_t i = 2; i < h.size(); ++i) {
      EXPECT_EQ(h[i].role, Role::kUser);
      EXPECT_EQ(h[i].content.rfind(kToolOutputHeader, 0), 0u);
    }
  }
  std::vector<Message> h = {{Role::kUser, "q", 1}, call("", kTwoCalls, 2)};
  pair_tool_units(h);
  EXPECT_EQ(h[1].content, "[called tools: order, stock]");
  EXPECT_TRUE(h[1].tool_calls.empty());
}

TEST(ToolUnitsTest, AFrontEndsRowAfterAWholeUnitEndsItsRunAndTheUnitStays) {
  // The review's case: the unit stays whole; only the front end's row becomes text.
  std::vector<Message> h = {{Role::kUser, "q", 1},
                            call("", kTwoCalls, 2),
                            result("x", "a", 3),
                            result("y", "b", 4),
                            {Role::kTool, "a front end's row", 5},
                            {Role::kAssistant, "done", 6}};
  pair_tool_units(h);
  EXPECT_FALSE(h[1].tool_calls.empty());
  EXPECT_EQ(h[2].role, Role::kTool);
  EXPECT_EQ(h[3].role, Role::kTool);
  EXPECT_EQ(h[4].role, Role::kUser);
  EXPECT_EQ(h[4].content, std::string(kToolOutputHeader) + "a front end's row");
}

TEST(ToolUnitsTest, CallsOnAMessageThatIsNotTheAssistantsAreDropped) {
  std::vector<Message> h = {{Role::kUser, "q", 1}};
  h[0].tool_calls = kTwoCalls;
  pair_tool_units(h);
  EXPECT_TRUE(h[0].tool_calls.empty());
  EXPECT_EQ(h[0].content, "q");
}

}  // namespace
}  // namespace autonous::engine
