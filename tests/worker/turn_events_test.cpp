#include "internal/worker/turn_events.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/events/event_types.h"

namespace autonous::worker {
namespace {

using nlohmann::json;
using Kind = TurnOutcome::Kind;

queue::Task task() {
  queue::Task t;
  t.id = 7;
  t.chat_id = "c";
  t.attempts = 2;
  t.agent_event_id = 41;
  return t;
}

ContextStep step(engine::Level level = engine::Level::kNone) {
  ContextStep s;
  s.built.messages = {{common::Role::kUser, "hi", 0}};
  s.built.figures.level = level;
  s.built.figures.estimated_tokens = 100;
  s.built.figures.budget_tokens = 1000;
  s.built.figures.counter = "chars4";
  s.at = common::from_unix_ms(5000);
  return s;
}

TurnOutcome outcome(Kind kind) {
  TurnOutcome o;
  o.kind = kind;
  o.attempt = 2;
  o.model = "m";
  o.started_at = common::from_unix_ms(4000);
  o.finished_at = common::from_unix_ms(6000);
  o.contexts.push_back(step());
  return o;
}

std::string types(const std::vector<events::Event>& list) {
  std::string s;
  for (const auto& e : list) s += (s.empty() ? "" : ",") + e.type;
  return s;
}

json payload(const std::vector<events::Event>& list, std::string_view type) {
  for (const auto& e : list)
    if (e.type == type) return json::parse(e.payload);
  ADD_FAILURE() << "no " << type;
  return {};
}

TEST(TurnEventsTest, ADoneTurnRecordsTheFullTrailUnderTheAgentEvent) {
  TurnOutcome o = outcome(Kind::kDone);
  openai::ChatResult r;
  r.content = "pong";
  r.finish_reason = "stop";
  r.http_status = 200;
  r.usage = common::Usage{120, 5, 125, 64};
  o.result = r;
  const auto list = turn_events(task(), o);
  EXPECT_EQ(types(list), "turn.started,context.compressed,llm.request,llm.response,turn.completed");
  for (const auto& e : list) {
    EXPECT_EQ(e.parent_id, 41);
    EXPECT_EQ(e.task_id, 7);
    EXPECT_EQ(e.chat_id, "c");
  }
  EXPECT_EQ(list.front().at_unix_ms, 4000);
  EXPECT_EQ(list.back().at_unix_ms, 6000);
  const json response = payload(list, events::kLlmResponse);
  EXPECT_EQ(response["usage"]["prompt_tokens"], 120);
  EXPECT_EQ(response["usage"]["cached_tokens"], 64);
  EXPECT_DOUBLE_EQ(response["prompt_tokens_per_estimated"].get<double>(), 1.2);
  EXPECT_FALSE(response.contains("calibration_scale"));
  EXPECT_EQ(payload(list, events::kTurnCompleted)["reply_chars"], 4);
  EXPECT_EQ(payload(list, events::kLlmRequest)["model"], "m");
}

TEST(TurnEventsTest, AnOverflowRebuildShowsBothContextsAndTheRecompressRetry) {
  TurnOutcome o = outcome(Kind::kDone);
  o.overflows.push_back(TurnFailure{"http_400", "context_length_exceeded", 400,
                                    std::chrono::milliseconds(9), std::nullopt,
                                    common::from_unix_ms(5500)});
  o.contexts.push_back(step(engine::Level::kAggressive));
  o.contexts.back().after_overflow = true;
  o.result = openai::ChatResult{};
  const auto list = turn_events(task(), o);
  EXPECT_EQ(types(list),
            "turn.started,context.compressed,llm.request,llm.retry,context.compressed,"
            "llm.request,llm.response,turn.completed");
  const json retry = payload(list, events::kLlmRetry);
  EXPECT_EQ(retry["recompress"], true);
  EXPECT_EQ(retry["delay_ms"], 0);
  EXPECT_EQ(retry["status"], 400);
  EXPECT_FALSE(json::parse(list[1].payload).contains("after_overflow"));
  EXPECT_EQ(json::parse(list[4].payload)["after_overflow"], true);
  EXPECT_EQ(json::parse(list[4].payload)["level"], "aggressive");
}

TEST(TurnEventsTest, ARetryAndAFailureEndTheTrailWithTheirReason) {
  TurnOutcome retry = outcome(Kind::kRetryLater);
  retry.failure = TurnFailure{"http_429",
                              "slow down",
                              429,
                              std::chrono::milliseconds(3),
                              std::chrono::milliseconds(2000),
                              retry.finished_at};
  retry.delay = std::chrono::milliseconds(2100);
  const auto r = turn_events(task(), retry);
  EXPECT_EQ(types(r), "turn.started,context.compressed,llm.request,llm.retry");
  EXPECT_EQ(payload(r, events::kLlmRetry)["retry_after_ms"], 2000);
  EXPECT_EQ(payload(r, events::kLlmRetry)["delay_ms"], 2100);

  TurnOutcome failed = outcome(Kind::kFailed);
  failed.failure =
      TurnFailure{"internal",   "disk I/O error",  std::nullopt, std::chrono::milliseconds(0),
                  std::nullopt, failed.finished_at};
  failed.error = "disk I/O error (gave up after 2 attempts)";
  const auto f = turn_events(task(), failed);
  EXPECT_EQ(types(f), "turn.started,context.compressed,llm.request,turn.failed");
  EXPECT_EQ(payload(f, events::kTurnFailed)["error"], failed.error);
  EXPECT_TRUE(payload(f, events::kTurnFailed)["status"].is_null());
}

TEST(TurnEventsTest, ExpiredLeasesReleaseAndALostLeaseRecordOnlyWhatHappened) {
  TurnOutcome expired = outcome(Kind::kFailed);
  expired.contexts.clear();
  expired.error = "gave up after 5 attempts whose leases expired (worker crashed or hung)";
  expired.failure =
      TurnFailure{"lease_expired", expired.error,      std::nullopt, std::chrono::milliseconds(0),
                  std::nullopt,    expired.finished_at};
  EXPECT_EQ(types(turn_events(task(), expired)), "turn.failed");

  EXPECT_EQ(types(turn_events(task(), outcome(Kind::kRelease))),
            "turn.started,context.compressed,llm.request,agent.released");
  EXPECT_TRUE(turn_events(task(), outcome(Kind::kLeaseLost)).empty());
}

TEST(TurnEventsTest, SummariesAndWarningsComeBeforeTheirContext) {
  TurnOutcome o = outcome(Kind::kRetryLater);
  o.failure = TurnFailure{"timeout",    "timed out",  std::nullopt, std::chrono::milliseconds(1),
                          std::nullopt, o.finished_at};
  engine::SummaryOutcome s;
  s.summary_id = 3;
  s.messages_covered = 12;
  s.usage = {common::Usage{1, 2, 3, std::nullopt}, std::nullopt};
  o.contexts[0].built.summarized = s;
  o.contexts[0].built.warnings = {{"bad_chat_settings", "ignored"}, {"summary_failed", "x"}};
  const auto list = turn_events(task(), o);
  EXPECT_EQ(types(list),
            "turn.started,context.summarized,llm.response,llm.response,context.warning,"
            "context.summary_failed,context.compressed,llm.request,llm.retry");
  const json summarized = payload(list, events::kContextSummarized);
  EXPECT_EQ(summarized["summary_id"], 3);
  ASSERT_EQ(summarized["usage"].size(), 2u);
  EXPECT_EQ(summarized["usage"][0]["total_tokens"], 3);
  EXPECT_TRUE(summarized["usage"][1].is_null());
}

// #31: every llm.response carries cost_usd at config/models.json's prices: the chat call's
// (priced as the model requested), each summary call's and each embeddings call's; null when
// the model has no price or the call no usage.
TEST(TurnEventsTest, EveryLlmResponseCarriesItsCost) {
  TurnOutcome o = outcome(Kind::kDone);
  o.model = "gpt-4o-mini";
  openai::ChatResult r;
  r.http_status = 200;
  r.model = "gpt-4o-mini-2024-07-18";
  r.content = "ok";
  r.usage = common::Usage{1000, 200, 1200, 400};
  o.result = r;
  engine::SummaryOutcome s;
  s.model = "gpt-4o";
  s.usage = {common::Usage{2000, 100, 2100, std::nullopt}, std::nullopt};
  o.contexts[0].built.summarized = s;
  o.embedding_calls = {
      SideCall{"text-embedding-3-small", common::Usage{5000, 0, 5000, {}},
               std::chrono::milliseconds(30)},
      SideCall{"my-embedder", common::Usage{10, 0, 10, {}}, std::chrono::milliseconds(3)}};
  const auto list = turn_events(task(), o);
  std::vector<json> responses;
  for (const auto& e : list)
    if (e.type == events::kLlmResponse) responses.push_back(json::parse(e.payload));
  ASSERT_EQ(responses.size(), 5u);
  // Embeddings first (made while the context was built): 5 000 × $0.02 / M.
  EXPECT_EQ(responses[0]["call"], "embeddings");
  EXPECT_NEAR(responses[0]["cost_usd"].get<double>(), 5000 * 0.02 / 1e6, 1e-15);
  EXPECT_EQ(responses[0]["latency_ms"], 30);
  EXPECT_TRUE(responses[1]["cost_usd"].is_null());  // no price for my-embedder
  // The summary's calls: gpt-4o at $2.50 in, $10 out; the one without usage has no figure.
  EXPECT_EQ(responses[2]["call"], "summary");
  EXPECT_NEAR(responses[2]["cost_usd"].get<double>(), (2000 * 2.50 + 100 * 10.0) / 1e6, 1e-15);
  EXPECT_TRUE(responses[3]["cost_usd"].is_null());
  // context.summarized's total is null: one of its calls has no figure.
  EXPECT_TRUE(payload(list, events::kContextSummarized)["cost_usd"].is_null());
  // The chat call: gpt-4o-mini at $0.15 in, $0.075 cached, $0.60 out.
  EXPECT_EQ(responses[4]["call"], "chat");
  EXPECT_NEAR(responses[4]["cost_usd"].get<double>(), (600 * 0.15 + 400 * 0.075 + 200 * 0.60) / 1e6,
              1e-15);
  // A model without a price: null, never a guess.
  o.model = "my-local-model";
  o.result->model = "my-local-model";
  o.embedding_calls.clear();
  o.contexts[0].built.summarized.reset();
  EXPECT_TRUE(payload(turn_events(task(), o), events::kLlmResponse)["cost_usd"].is_null());
}

TEST(TurnEventsTest, InvalidUtf8InServerTextStillGivesValidJson) {
  TurnOutcome o = outcome(Kind::kFailed);
  o.error = std::string("bad \xFF byte");
  o.failure = TurnFailure{"http_500",   o.error,      500, std::chrono::milliseconds(1),
                          std::nullopt, o.finished_at};
  for (const auto& e : turn_events(task(), o)) {
    EXPECT_TRUE(json::accept(e.payload)) << e.payload;
  }
}

}  // namespace
}  // namespace autonous::worker
