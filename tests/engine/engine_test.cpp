// engine_settings: the engine's settings from the environment, and the combinations it refuses.
#include "internal/engine/engine.h"

#include <gtest/gtest.h>

#include "internal/config/config.h"
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
}

}  // namespace
}  // namespace autonous::engine
