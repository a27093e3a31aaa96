#include "internal/events/event_stats.h"

#include <gtest/gtest.h>

#include "internal/events/event_log.h"
#include "internal/events/event_types.h"
#include "tests/support/test_db.h"

namespace autonous::events {
namespace {

class EventStatsTest : public ::testing::Test {
 protected:
  int64_t add(std::string_view type, const std::string& chat, const std::string& payload,
              std::optional<int64_t> parent = std::nullopt) {
    Event e;
    e.type = std::string(type);
    e.chat_id = chat;
    e.parent_id = parent;
    e.payload = payload;
    return append(t_.db(), e);
  }
  testing::TestDb t_;
};

TEST_F(EventStatsTest, CountsCompressionsByLevelAndTheEngineEventsOfEachChat) {
  add(kContextCompressed, "a", R"({"level":"none","tokens_before":100,"tokens_after":100})");
  add(kContextCompressed, "a",
      R"({"level":"aggressive","tokens_before":1000,"tokens_after":500,"after_overflow":true})");
  add(kContextCompressed, "b", R"({"level":"emergency","tokens_before":400,"tokens_after":100})");
  add(kContextWarning, "a", R"({"reason":"bad_chat_settings"})");
  add(kContextSummarized, "a", "{}");
  add(kContextSummaryFailed, "b", "{}");

  const CompressionStats all = compression_stats(t_.db(), {});
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

  const CompressionStats b = compression_stats(t_.db(), {std::string("b"), std::nullopt});
  EXPECT_EQ(b.turns, 1);
  EXPECT_EQ(b.warnings, 0);
  EXPECT_EQ(b.summary_failures, 1);
}

TEST_F(EventStatsTest, PairsEachResponseWithItsTurnsRequestForTheEstimateRatio) {
  const int64_t agent = add(kAgentStarted, "a", "{}");
  add(kLlmRequest, "a", R"({"model":"m","token_counter":"estimate"})", agent);
  add(kLlmResponse, "a", R"({"estimated_tokens":100,"usage":{"prompt_tokens":120}})", agent);
  const int64_t agent2 = add(kAgentStarted, "a", "{}");
  add(kLlmRequest, "a", R"({"model":"m","token_counter":"estimate"})", agent2);
  add(kLlmResponse, "a", R"({"estimated_tokens":100,"usage":{"prompt_tokens":80}})", agent2);
  // A response without usage is left out.
  add(kLlmResponse, "a", R"({"estimated_tokens":100,"usage":null})", agent2);

  const auto stats = estimate_stats(t_.db(), {});
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].model, "m");
  EXPECT_EQ(stats[0].token_counter, "estimate");
  EXPECT_EQ(stats[0].calls, 2);
  EXPECT_DOUBLE_EQ(stats[0].min_ratio, 0.8);
  EXPECT_DOUBLE_EQ(stats[0].max_ratio, 1.2);
  EXPECT_DOUBLE_EQ(stats[0].share_under, 0.5);
}

}  // namespace
}  // namespace autonous::events
