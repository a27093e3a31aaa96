#include "internal/context/policy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace autonous::context {
namespace {

TEST(PolicyTest, ParsesEveryKeyAndRoundTrips) {
  const ChatOverrides o = parse_overrides(
      R"({"strategy":"sliding_window","max_tokens":5000,"recent_messages":7,"soft":0.5,)"
      R"("warn":0.6,"hard":0.7,"target":0.4})");
  EXPECT_EQ(o.strategy, Strategy::kSlidingWindow);
  EXPECT_EQ(o.max_tokens, 5000);
  EXPECT_EQ(o.recent_messages, 7);
  EXPECT_DOUBLE_EQ(*o.soft, 0.5);
  EXPECT_DOUBLE_EQ(*o.target, 0.4);
  const ChatOverrides again = parse_overrides(overrides_json(o));
  EXPECT_EQ(overrides_json(again), overrides_json(o));
  EXPECT_TRUE(parse_overrides("{}").empty());
  EXPECT_EQ(overrides_json({}), "{}");
}

TEST(PolicyTest, RefusesBadSettingsNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[]", "settings"},
      {"not json", "settings"},
      {R"({"strategy":"magic"})", "strategy"},
      {R"({"strategy":3})", "strategy"},
      {R"({"max_tokens":0})", "max_tokens"},
      {R"({"max_tokens":1.5})", "max_tokens"},
      {R"({"max_tokens":"8000"})", "max_tokens"},
      {R"({"recent_messages":-1})", "recent_messages"},
      {R"({"soft":0})", "soft"},
      {R"({"warn":1.2})", "warn"},
      {R"({"hard":"high"})", "hard"},
      {R"({"colour":"blue"})", "colour"}};
  for (const auto& [json, field] : bad) {
    SCOPED_TRACE(json);
    try {
      (void)parse_overrides(json);
      ADD_FAILURE() << "accepted";
    } catch (const PolicyError& e) {
      EXPECT_EQ(e.field(), field);
    }
  }
}

TEST(PolicyTest, ValidateChecksTheThresholdOrder) {
  ContextPolicy p;
  EXPECT_NO_THROW(validate(p));
  p.thresholds = {0.6, 0.6, 0.6, 0.6};  // equal is allowed
  EXPECT_NO_THROW(validate(p));
  p.thresholds = {0.9, 0.85, 0.95, 0.6};
  EXPECT_THROW(validate(p), PolicyError);
  p.thresholds = {0.7, 0.85, 0.95, 0.75};
  try {
    validate(p);
    ADD_FAILURE();
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.field(), "target");
    EXPECT_NE(std::string(e.what()).find("target <= soft"), std::string::npos);
  }
  p = {};
  p.max_tokens = 0;
  EXPECT_THROW(validate(p), PolicyError);
}

TEST(PolicyTest, ApplyAndMergeLetLaterValuesWin) {
  ContextPolicy env;
  ChatOverrides a;
  a.strategy = Strategy::kSlidingWindow;
  a.soft = 0.5;
  ChatOverrides b;
  b.soft = 0.6;
  b.max_tokens = 100;
  const ContextPolicy p = apply(env, merge(a, b));
  EXPECT_EQ(p.strategy, Strategy::kSlidingWindow);
  EXPECT_DOUBLE_EQ(p.thresholds.soft, 0.6);
  EXPECT_EQ(p.max_tokens, 100);
  EXPECT_DOUBLE_EQ(p.thresholds.warn, 0.85);  // from env
}

TEST(PolicyTest, NamesRoundTrip) {
  for (Strategy s : {Strategy::kSlidingWindow, Strategy::kTokenBudget, Strategy::kSummarize})
    EXPECT_EQ(parse_strategy(to_string(s)), s);
  EXPECT_FALSE(parse_strategy("Token_Budget"));
  EXPECT_EQ(to_string(Level::kAggressive), "aggressive");
}

}  // namespace
}  // namespace autonous::context
