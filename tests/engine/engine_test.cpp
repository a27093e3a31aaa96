// engine_settings: the engine's settings from the environment, and the combinations it refuses;
// the calibration rule (calibration_store.h).
#include "internal/engine/engine.h"

#include <limits>

#include <gtest/gtest.h>

#include "internal/config/config.h"
#include "internal/engine/calibration_store.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine {
namespace {

using config::Config;

class EngineTest : public ::testing::Test {
 protected:
  std::string variable_refused(const Config& c) {
    try {
      (void)engine_settings(c, counter_);
    } catch (const config::ConfigError& e) {
      return e.variable();
    }
    return "accepted";
  }
  tokens::CharsOver4Counter counter_{3, 3};
};

TEST_F(EngineTest, SettingsComeFromTheModelPresetWhenNoBudgetIsSet) {
  Config c;  // gpt-4o-mini, MAX_CONTEXT_TOKENS unset
  const EngineSettings s = engine_settings(c, counter_);
  EXPECT_EQ(s.context.policy.max_tokens, 128'000 - 16'384);
  EXPECT_EQ(s.context.ceiling, 128'000 - 16'384);
  EXPECT_EQ(s.summary_model, "gpt-4o-mini");
  EXPECT_FALSE(s.simple_compressor);
  c.max_context_tokens = 6000;
  c.context_compressor = "simple";
  const EngineSettings own = engine_settings(c, counter_);
  EXPECT_EQ(own.context.policy.max_tokens, 6000);
  EXPECT_TRUE(own.simple_compressor);
}

TEST_F(EngineTest, BadCombinationsAreRefusedNamingTheVariable) {
  Config c;
  c.max_context_tokens = 20;
  EXPECT_EQ(variable_refused(c), "MAX_CONTEXT_TOKENS");
  c = Config{};
  c.context_window = 100;
  c.reserve_output_tokens = 95;
  EXPECT_EQ(variable_refused(c), "CONTEXT_WINDOW");
  c = Config{};
  c.reserve_output_tokens = 200'000;
  EXPECT_EQ(variable_refused(c), "RESERVE_OUTPUT_TOKENS");
  c = Config{};
  c.context_strategy = "summarize";
  c.max_context_tokens = 1500;
  c.summary_max_tokens = 1024;
  EXPECT_EQ(variable_refused(c), "SUMMARY_MAX_TOKENS");
  c.summary_max_tokens = 512;
  EXPECT_EQ(variable_refused(c), "accepted");
  c = Config{};
  c.soft_threshold = 0.9;  // above warn 0.85
  EXPECT_EQ(variable_refused(c), "CONTEXT_SOFT_THRESHOLD");
  // The variable changed from its default is named, not its unchanged neighbour.
  c = Config{};
  c.soft_threshold = 1e-300;  // below target 0.6: was reported as CONTEXT_TARGET
  EXPECT_EQ(variable_refused(c), "CONTEXT_SOFT_THRESHOLD");
  c = Config{};
  c.hard_threshold = 0.5;  // below warn 0.85
  EXPECT_EQ(variable_refused(c), "CONTEXT_HARD_THRESHOLD");
  c = Config{};
  c.target_usage = 0.8;  // above soft 0.70
  EXPECT_EQ(variable_refused(c), "CONTEXT_TARGET");
}

// #28: unset, SUMMARY_MAX_TOKENS follows the budget (a quarter, at most 1 024), so summarize
// starts at the small budgets local models have; a value that is set is held as before.
TEST_F(EngineTest, SummaryMaxTokensUnsetFollowsTheBudget) {
  Config c;
  c.context_strategy = "summarize";
  c.max_context_tokens = 2000;
  EngineSettings s = engine_settings(c, counter_);
  EXPECT_EQ(s.summary_max_tokens, 500);
  EXPECT_EQ(s.context.summary.max_tokens, 500);
  c.max_context_tokens = 1000;
  EXPECT_EQ(engine_settings(c, counter_).summary_max_tokens, 250);
  c.max_context_tokens = 100'000;
  EXPECT_EQ(engine_settings(c, counter_).summary_max_tokens, 1024);
  c.max_context_tokens = 2000;
  c.summary_max_tokens = 1024;  // set: refused at this budget, naming the variable
  EXPECT_EQ(variable_refused(c), "SUMMARY_MAX_TOKENS");
  c.summary_max_tokens = 700;
  EXPECT_EQ(engine_settings(c, counter_).summary_max_tokens, 700);
  EXPECT_EQ(default_summary_max_tokens(100), 64);
}

TEST(CalibrationTest, ImplausibleUsageIsIgnoredAndAStoredScaleIsBounded) {
  EXPECT_FALSE(calibration_next(1.0, 100, 95));  // within half a percent of the aim
  EXPECT_FALSE(calibration_next(1.0, 0, 90));    // nothing estimated
  EXPECT_FALSE(calibration_next(1.0, 100, -5));  // a negative usage says nothing
  EXPECT_DOUBLE_EQ(*calibration_next(1.0, 100, 150), 1.5 * 1.05);
  EXPECT_DOUBLE_EQ(*calibration_next(2.0, 100, 150), 3.0 * 1.05);  // the estimate was at scale 2
  // At most twofold a reply: a wrong usage under the bound cannot take it to the bound at once.
  EXPECT_DOUBLE_EQ(*calibration_next(1.0, 100, 250), 2.0);
  EXPECT_DOUBLE_EQ(*calibration_next(1.0, 100, 700), 2.0);
  // A usage near INT64_MAX (or anything needing more than kMaxScale) says nothing.
  EXPECT_FALSE(calibration_next(1.0, 1000, std::numeric_limits<int64_t>::max()));
  EXPECT_FALSE(calibration_next(1.0, 100, 800));  // 8.4 with the margin
  EXPECT_FALSE(calibration_next(4.0, 100, 201));  // 8.44
  // A stored scale outside [kMinScale, kMaxScale] (an older binary's poisoned row, a row written by
  // hand) applies as no scale at all.
  EXPECT_DOUBLE_EQ(calibration_applied(2.9e17), 1.0);
  EXPECT_DOUBLE_EQ(calibration_applied(0.2), 1.0);
  EXPECT_DOUBLE_EQ(calibration_applied(0.3), 0.3);
  EXPECT_DOUBLE_EQ(calibration_applied(std::numeric_limits<double>::quiet_NaN()), 1.0);
  EXPECT_DOUBLE_EQ(calibration_applied(std::numeric_limits<double>::infinity()), 1.0);
  EXPECT_DOUBLE_EQ(calibration_applied(3.5), 3.5);
  EXPECT_DOUBLE_EQ(calibration_applied(tokens::ScaledCounter::kMaxScale),
                   tokens::ScaledCounter::kMaxScale);
}

}  // namespace
}  // namespace autonous::engine
