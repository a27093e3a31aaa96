#include "internal/engine/policy.h"

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/engine/context_settings.h"

namespace autonous::engine {
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
}  // namespace autonous::engine

namespace autonous::engine {
namespace {

TEST(PolicyFieldsTest, AToolListIsNamesOrNoneAndBadNamesAreRefused) {
  EXPECT_EQ(parse_tool_list("none"), std::vector<std::string>{});
  EXPECT_EQ(parse_tool_list(" order_status , get-sum"),
            (std::vector<std::string>{"order_status", "get-sum"}));
  for (const char* bad : {"", "a,,b", "a,", "has space", "a,a", "caf\xc3\xa9",
                          "x123456789x123456789x123456789x123456789x123456789x123456789x1234"}) {
    try {
      (void)parse_tool_list(bad);
      ADD_FAILURE() << bad;
    } catch (const PolicyError& e) {
      EXPECT_EQ(e.field(), "tools") << bad;
    }
  }
  EXPECT_EQ(parse_overrides(R"({"tools": []})").tools, std::vector<std::string>{});
  EXPECT_FALSE(parse_overrides(R"({})").tools.has_value());
  EXPECT_THROW((void)parse_overrides(R"({"tools": "a,b"})"), PolicyError);
  EXPECT_THROW((void)parse_overrides(R"({"tools": [1]})"), PolicyError);
  EXPECT_THROW((void)parse_overrides(R"({"tools": ["a b"]})"), PolicyError);
  // An unset list offers every tool; a chat's list replaces the environment's.
  EXPECT_FALSE(apply(ContextPolicy{}, ChatOverrides{}).tools.has_value());
  ChatOverrides none;
  none.tools = std::vector<std::string>{};
  EXPECT_EQ(apply(ContextPolicy{}, none).tools, std::vector<std::string>{});
}

TEST(PolicyFieldsTest, OneTableNamesEveryFieldOnceAndDrivesParsingAndJson) {
  std::set<std::string_view> keys;
  std::set<std::string_view> flags;
  std::set<std::string_view> variables;
  for (const auto& f : policy_fields()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    EXPECT_TRUE(flags.insert(f.flag).second) << f.flag;
    EXPECT_TRUE(variables.insert(f.variable).second) << f.variable;
    EXPECT_EQ(find_policy_field(f.key), &f);
    EXPECT_FALSE(f.help.empty());
  }
  EXPECT_EQ(keys.size(), 9u);
  EXPECT_EQ(find_policy_field("nope"), nullptr);
  // Every field set, through JSON and back, through merge and apply.
  ChatOverrides o;
  o.strategy = Strategy::kSummarize;
  o.max_tokens = 5000;
  o.recent_messages = 9;
  o.soft = 0.5;
  o.warn = 0.6;
  o.hard = 0.7;
  o.target = 0.4;
  o.tools = std::vector<std::string>{"order_status", "get-sum"};
  o.model = "meta-llama/Llama-3.1-8B-Instruct";
  const ChatOverrides back = parse_overrides(overrides_json(o));
  EXPECT_EQ(overrides_json(back), overrides_json(o));
  const ContextPolicy p = apply(ContextPolicy{}, merge(ChatOverrides{}, back));
  EXPECT_EQ(p.strategy, Strategy::kSummarize);
  EXPECT_EQ(p.max_tokens, 5000);
  EXPECT_EQ(p.recent_messages, 9);
  EXPECT_EQ(p.model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_DOUBLE_EQ(p.thresholds.soft, 0.5);
  EXPECT_DOUBLE_EQ(p.thresholds.warn, 0.6);
  EXPECT_DOUBLE_EQ(p.thresholds.hard, 0.7);
  EXPECT_DOUBLE_EQ(p.thresholds.target, 0.4);
  EXPECT_EQ(p.tools, (std::vector<std::string>{"order_status", "get-sum"}));
  EXPECT_FALSE(back.empty());
  EXPECT_TRUE(ChatOverrides{}.empty());
}

// #31: a chat's own model: a name as providers spell them, nothing else.
TEST(PolicyFieldsTest, AModelIsANameWithoutSpacesOrControls) {
  for (const char* ok : {"gpt-4.1-mini", "meta-llama/Llama-3.1-8B-Instruct", "qwen3:8b", "m"})
    EXPECT_EQ(parse_overrides(nlohmann::json{{"model", ok}}.dump()).model, ok) << ok;
  for (const nlohmann::json& bad :
       {nlohmann::json(""), nlohmann::json("two words"), nlohmann::json("tab\there"),
        nlohmann::json(std::string(201, 'm')), nlohmann::json("caf\u00e9"), nlohmann::json(4)}) {
    try {
      (void)parse_overrides(nlohmann::json{{"model", bad}}.dump());
      ADD_FAILURE() << bad.dump();
    } catch (const PolicyError& e) {
      EXPECT_EQ(e.field(), "model");
    }
  }
}

// A chat's own model brings its preset's budget as the default and ceiling; its own max_tokens
// still wins up to that ceiling; MAX_CONTEXT_TOKENS caps every model.
TEST(PolicyFieldsTest, AChatsModelBringsItsPresetsBudget) {
  ContextSettings s;
  s.model = "gpt-4o-mini";
  s.policy.max_tokens = 128'000 - 16'384;
  s.ceiling = 128'000 - 16'384;
  ChatOverrides o;
  EXPECT_EQ(effective_policy(s, o).max_tokens, 128'000 - 16'384);
  o.model = "gpt-4";  // 8 192 − 1 024
  EXPECT_EQ(effective_policy(s, o).max_tokens, 7'168);
  o.max_tokens = 5'000;
  EXPECT_EQ(effective_policy(s, o).max_tokens, 5'000);
  o.max_tokens = 50'000;  // above gpt-4's ceiling
  EXPECT_EQ(effective_policy(s, o).max_tokens, 7'168);
  o.max_tokens.reset();
  o.model = "my-local-model";  // unknown window: the default budget
  EXPECT_EQ(effective_policy(s, o).max_tokens, kUnknownModelBudget);
  o.model = "gpt-4o-mini";  // the environment's own model: the environment's budget
  EXPECT_EQ(effective_policy(s, o).max_tokens, 128'000 - 16'384);
  s.max_context_tokens = 4'000;
  o.model = "gpt-4.1";
  EXPECT_EQ(effective_policy(s, o).max_tokens, 4'000);
}

TEST(PolicyFieldsTest, UnknownKeysListEveryKnownOne) {
  try {
    (void)parse_overrides(R"({"colour":"red"})");
    FAIL();
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.field(), "colour");
    EXPECT_NE(std::string(e.what()).find(
                  "strategy, max_tokens, recent_messages, soft, warn, hard, target"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace autonous::engine
