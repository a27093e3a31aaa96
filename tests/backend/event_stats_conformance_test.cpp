// `autonous context stats` (events/event_stats.h) through the seam (Session::events()), the same
// assertions on both backends: the compression tallies and the estimate-vs-usage ratios, and
// both backends' queries agreeing on the same events, also on payloads no worker writes.
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/events/event_log.h"
#include "internal/events/event_stats.h"
#include "internal/events/event_types.h"
#include "tests/backend/backend_fixture.h"

namespace autonous::events {
namespace {

template <typename B>
class EventStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (B::kPostgres) PG_TEST_OR_SKIP();
    b_ = std::make_unique<B>();
  }
  backend::EventLog& log() { return b_->s->events(); }
  int64_t add(std::string_view type, const std::string& chat, const std::string& payload,
              std::optional<int64_t> parent = std::nullopt,
              std::optional<int64_t> task = std::nullopt) {
    Event e;
    e.type = std::string(type);
    e.chat_id = chat;
    e.parent_id = parent;
    e.task_id = task;
    e.payload = payload;
    return log().append(e);
  }
  // A task of `chat` (a call's event belongs to one: a chat's costs are read through them).
  int64_t task(const std::string& chat) { return b_->s->queue().enqueue(chat, "x"); }
  std::unique_ptr<B> b_;
};

TYPED_TEST_SUITE(EventStatsTest, testing::Backends, testing::BackendNames);

TYPED_TEST(EventStatsTest, CountsCompressionsByLevelAndTheEngineEventsOfEachChat) {
  this->add(kContextCompressed, "a", R"({"level":"none","tokens_before":100,"tokens_after":100})");
  this->add(
      kContextCompressed, "a",
      R"({"level":"aggressive","tokens_before":1000,"tokens_after":500,"after_overflow":true})");
  this->add(kContextCompressed, "b",
            R"({"level":"emergency","tokens_before":400,"tokens_after":100})");
  this->add(kContextWarning, "a", R"({"reason":"bad_chat_settings"})");
  this->add(kContextSummarized, "a", "{}");
  this->add(kContextSummaryFailed, "b", "{}");

  const CompressionStats all = this->log().compression_stats({});
  EXPECT_EQ(all.turns, 3);
  EXPECT_EQ(all.by_level.at("none"), 1);
  EXPECT_EQ(all.by_level.at("aggressive"), 1);
  EXPECT_EQ(all.by_level.at("emergency"), 1);
  EXPECT_EQ(all.compressed_turns, 2);
  EXPECT_DOUBLE_EQ(all.mean_ratio, (0.5 + 0.25) / 2);
  EXPECT_EQ(all.tokens_saved, 800);
  EXPECT_EQ(all.overflow_rebuilds, 1);
  EXPECT_EQ(all.warnings, 1);
  EXPECT_EQ(all.summaries, 1);
  EXPECT_EQ(all.summary_failures, 1);

  const CompressionStats b = this->log().compression_stats({std::string("b"), std::nullopt});
  EXPECT_EQ(b.turns, 1);
  EXPECT_EQ(b.warnings, 0);
  EXPECT_EQ(b.summary_failures, 1);
}

TYPED_TEST(EventStatsTest, PairsEachResponseWithItsTurnsRequestForTheEstimateRatio) {
  const int64_t agent = this->add(kAgentStarted, "a", "{}");
  this->add(kLlmRequest, "a", R"({"model":"m","token_counter":"estimate"})", agent);
  this->add(kLlmResponse, "a", R"({"estimated_tokens":100,"usage":{"prompt_tokens":120}})", agent);
  const int64_t agent2 = this->add(kAgentStarted, "a", "{}");
  this->add(kLlmRequest, "a", R"({"model":"m","token_counter":"estimate"})", agent2);
  this->add(kLlmResponse, "a", R"({"estimated_tokens":100,"usage":{"prompt_tokens":80}})", agent2);
  // A response without usage is left out.
  this->add(kLlmResponse, "a", R"({"estimated_tokens":100,"usage":null})", agent2);

  const auto stats = this->log().estimate_stats({});
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].model, "m");
  EXPECT_EQ(stats[0].token_counter, "estimate");
  EXPECT_EQ(stats[0].calls, 2);
  EXPECT_DOUBLE_EQ(stats[0].min_ratio, 0.8);
  EXPECT_DOUBLE_EQ(stats[0].max_ratio, 1.2);
  EXPECT_DOUBLE_EQ(stats[0].share_under, 0.5);
}

// #31: what the calls cost, per (model, call), from llm.response's cost_usd; a call without a
// figure counts as a call and adds nothing; older events without "call" are chat calls.
TYPED_TEST(EventStatsTest, SumsTheCostOfEachModelsCallsAndOfOneChat) {
  const int64_t a = this->task("a");
  const int64_t b = this->task("b");
  const auto call = [&](const std::string& chat, const std::string& payload) {
    this->add(kLlmResponse, chat, payload, std::nullopt, chat == "a" ? a : b);
  };
  call("a", R"({"call":"chat","model":"gpt-4o","cost_usd":0.004,)"
            R"("usage":{"prompt_tokens":1000,"completion_tokens":200,"cached_tokens":400}})");
  call("a", R"({"model":"gpt-4o","cost_usd":0.001,"usage":{"prompt_tokens":100}})");
  call("b", R"({"call":"chat","model":"gpt-4o","cost_usd":null})");
  call("b",
       R"({"call":"summary","model":"gpt-4o-mini","cost_usd":0.0002,"usage":{"prompt_tokens":9}})");
  call("b", R"({"call":"embeddings","model":"e","cost_usd":"1"})");
  call("b", R"({"call":"chat","model":"x","cost_usd":-3})");
  this->add(kLlmRequest, "b", R"({"model":"gpt-4o","cost_usd":5})", std::nullopt, b);  // no call

  const auto all = this->log().cost_stats({});
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].model, "gpt-4o");  // most dollars first
  EXPECT_EQ(all[0].call, "chat");
  EXPECT_EQ(all[0].calls, 3);
  EXPECT_EQ(all[0].priced_calls, 2);
  EXPECT_NEAR(all[0].cost_usd, 0.005, 1e-12);
  EXPECT_EQ(all[0].prompt_tokens, 1100);
  EXPECT_EQ(all[0].completion_tokens, 200);
  EXPECT_EQ(all[0].cached_tokens, 400);
  EXPECT_EQ(all[1].call, "summary");
  EXPECT_NEAR(all[1].cost_usd, 0.0002, 1e-12);
  for (size_t i = 2; i < 4; ++i) EXPECT_EQ(all[i].priced_calls, 0) << all[i].model;

  const auto of_b = this->log().cost_stats({std::string("b"), std::nullopt});
  const nlohmann::ordered_json j = cost_json(of_b);
  EXPECT_NEAR(j["usd"].get<double>(), 0.0002, 1e-12);
  EXPECT_EQ(j["calls"], 4);
  EXPECT_EQ(j["priced_calls"], 1);
  EXPECT_EQ(j["partial"], true);
  const auto none = cost_json(this->log().cost_stats({std::string("nobody"), std::nullopt}));
  EXPECT_TRUE(none["usd"].is_null());
  EXPECT_EQ(none["calls"], 0);
}

// The PostgreSQL queries read the same figures from the same events as SQLite's, also from
// payloads no worker writes (strings for numbers, fractions, missing fields, odd flags).
TEST(EventStatsOnBothBackends, AgreeOnTheSameEventsIncludingOddPayloads) {
  PG_TEST_OR_SKIP();
  testing::SqliteBackend lite;
  testing::PgBackend pg;
  const std::vector<std::tuple<std::string_view, std::string, std::string, bool>> rows = {
      {kContextCompressed, "a", R"({"level":"none","tokens_before":100,"tokens_after":100})", 0},
      {kContextCompressed, "a", R"({"level":"normal","tokens_before":"lots","tokens_after":1.5})",
       0},
      {kContextCompressed, "b",
       R"({"level":"aggressive","tokens_before":1000,"tokens_after":500,"after_overflow":true})",
       0},
      {kContextCompressed, "b", R"({"level":"emergency","tokens_before":9,"after_overflow":"x"})",
       0},
      {kContextCompressed, "b", R"({"tokens_before":10,"after_overflow":false})", 0},
      {kContextCompressed, "a", R"({"level":"normal","tokens_before":8,"after_overflow":1})", 0},
      // Strings count as absent on both; huge figures are clamped to 10^12, negative ones to 0.
      {kContextCompressed, "a", R"({"level":"normal","tokens_before":"1000","tokens_after":"1"})",
       0},
      {kContextCompressed, "b", R"({"level":"normal","tokens_before":1e30,"tokens_after":1e300})",
       0},
      {kContextCompressed, "b", R"({"level":"normal","tokens_before":1e30,"tokens_after":-5})", 0},
      {kContextCompressed, "a", R"({"level":"none","after_overflow":"1"})", 0},  // not a flag
      {kContextWarning, "a", "{}", 0},
      {kContextSummarized, "b", "{}", 0},
      {kAgentStarted, "a", "{}", 0},
      {kLlmRequest, "a", R"({"model":"m","token_counter":"estimate"})", 1},
      {kLlmResponse, "a", R"({"estimated_tokens":100,"usage":{"prompt_tokens":120}})", 1},
      {kLlmResponse, "a", R"({"estimated_tokens":"100","usage":{"prompt_tokens":90}})", 1},
      {kLlmResponse, "a", R"({"estimated_tokens":100,"usage":{"prompt_tokens":"9"}})", 1},
      {kAgentStarted, "b", "{}", 0},
      {kLlmRequest, "b", R"({"model":"n"})", 1},
      {kLlmResponse, "b", R"({"estimated_tokens":50.5,"usage":{"prompt_tokens":101}})", 1},
      {kLlmResponse, "b", R"({"estimated_tokens":1e300,"usage":{"prompt_tokens":1e30}})", 1},
      {kLlmResponse, "b", R"({"call":"summary","model":"s","cost_usd":0.25})", 1},
      {kLlmResponse, "b", R"({"model":"n","cost_usd":1e-9,"usage":{"cached_tokens":"3"}})", 1},
      {kLlmResponse, "a", R"({"model":"m","cost_usd":true})", 1}};
  std::optional<int64_t> parent;
  for (const auto& [type, chat, payload, child] : rows) {
    Event e;
    e.type = std::string(type);
    e.chat_id = chat;
    e.payload = payload;
    if (child) e.parent_id = parent;
    const int64_t id = lite.s->events().append(e);
    const int64_t pg_id = pg.s->events().append(e);
    ASSERT_EQ(id, pg_id);
    if (type == kAgentStarted) parent = id;
  }
  // Beyond a double (a front end's insert; append() refuses it): the clamp keeps the casts safe.
  const std::string beyond =
      "INSERT INTO events(type, chat_id, payload) VALUES ('context.compressed', 'b', "
      "'{\"level\":\"normal\",\"tokens_before\":1e400,\"tokens_after\":1}')";
  lite.exec(beyond);
  pg.exec(beyond);
  // Below a double's least (a positive numeric on PostgreSQL, 0.0 on SQLite): not a figure.
  const std::string tiny =
      "INSERT INTO events(type, chat_id, parent_id, payload) VALUES ('llm.response', 'b', " +
      std::to_string(*parent) +
      ", '{\"estimated_tokens\":1e-400,\"usage\":{\"prompt_tokens\":1}}')";
  lite.exec(tiny);
  pg.exec(tiny);
  for (const StatsFilter& f : {StatsFilter{}, StatsFilter{std::string("b"), std::nullopt},
                               StatsFilter{std::nullopt, std::string("2000-01-01")},
                               StatsFilter{std::nullopt, std::string("9999-01-01")}}) {
    EXPECT_EQ(
        context_stats_json(lite.s->events().compression_stats(f),
                           lite.s->events().estimate_stats(f), lite.s->events().cost_stats(f)),
        context_stats_json(pg.s->events().compression_stats(f), pg.s->events().estimate_stats(f),
                           pg.s->events().cost_stats(f)));
  }
  const auto check = [](const CompressionStats& all, const std::vector<EstimateStats>& est) {
    EXPECT_EQ(all.turns, 11);
    EXPECT_EQ(all.by_level.at("unknown"), 1);
    EXPECT_EQ(all.overflow_rebuilds, 2);  // true and 1; not "x", not false
    EXPECT_EQ(all.tokens_saved, 0 + 500 + 9 + 8 + 0 + 0 + 1'000'000'000'000 * 2 - 1);
    ASSERT_EQ(est.size(), 2u);  // the string-valued responses are left out
    EXPECT_EQ(est[0].calls + est[1].calls, 3);
  };
  check(lite.s->events().compression_stats({}), lite.s->events().estimate_stats({}));
  check(pg.s->events().compression_stats({}), pg.s->events().estimate_stats({}));
}

}  // namespace
}  // namespace autonous::events
