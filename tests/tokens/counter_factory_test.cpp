#include "internal/tokens/counter_factory.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "internal/tokens/bpe_counter.h"
#include "tests/support/token_data.h"

namespace autonous::tokens {
namespace {

TEST(CounterFactoryTest, MapsModelsToTheirEncodings) {
  for (const char* m :
       {"gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06", "chatgpt-4o-latest", "gpt-4.1",
        "gpt-4.1-nano", "o1", "o1-mini", "o3-mini", "o4-mini", "gpt-5", "ft:gpt-4o-mini:acme::abc"})
    EXPECT_EQ(encoding_for_model(m), "o200k_base") << m;
  for (const char* m : {"gpt-4", "gpt-4-turbo", "gpt-4-0613", "gpt-3.5-turbo", "gpt-35-turbo"})
    EXPECT_EQ(encoding_for_model(m), "cl100k_base") << m;
  for (const char* m : {"llama3", "claude-3-5-sonnet", "qwen2.5", "deepseek-chat", ""})
    EXPECT_EQ(encoding_for_model(m), std::nullopt) << m;
}

TEST(CounterFactoryTest, AutoPicksTheModelsEncoding) {
  auto c = make_token_counter("auto", "gpt-4o-mini", testing::tokenizer_data_dir());
  EXPECT_EQ(c.counter->name(), "o200k_base");
  EXPECT_TRUE(c.warning.empty());
  c = make_token_counter("auto", "gpt-3.5-turbo", testing::tokenizer_data_dir());
  EXPECT_EQ(c.counter->name(), "cl100k_base");
}

TEST(CounterFactoryTest, AutoFallsBackWithAWarning) {
  auto c = make_token_counter("auto", "claude-sonnet-4-5", testing::tokenizer_data_dir());
  EXPECT_EQ(c.counter->name(), "estimate");
  EXPECT_NE(c.warning.find("claude-sonnet-4-5"), std::string::npos);
  c = make_token_counter("auto", "gpt-4o", "/nonexistent");
  EXPECT_EQ(c.counter->name(), "estimate");
  EXPECT_NE(c.warning.find("missing"), std::string::npos);
}

// #31: `auto` prefers the counter the model's preset names (config/models.json, MODELS_FILE)
// to the name rules; a preset's counter whose data is missing falls back with a warning.
TEST(CounterFactoryTest, AutoPrefersThePresetsTokenizer) {
  auto c = make_token_counter("auto", "house-model", testing::tokenizer_data_dir(), "o200k_base");
  EXPECT_EQ(c.counter->name(), "o200k_base");
  EXPECT_TRUE(c.warning.empty());
  c = make_token_counter("auto", "gpt-4o", testing::tokenizer_data_dir(), "cl100k_base");
  EXPECT_EQ(c.counter->name(), "cl100k_base");  // the preset wins over the name
  c = make_token_counter("auto", "house-model", "/nonexistent", "o200k_base");
  EXPECT_EQ(c.counter->name(), "estimate");
  EXPECT_FALSE(c.warning.empty());
  c = make_token_counter("auto", "gpt-4o", testing::tokenizer_data_dir(), "");
  EXPECT_EQ(c.counter->name(), "o200k_base");  // no preset counter: the name rules
  // An explicit TOKEN_COUNTER is never overridden by the preset.
  c = make_token_counter("cl100k_base", "x", testing::tokenizer_data_dir(), "o200k_base");
  EXPECT_EQ(c.counter->name(), "cl100k_base");
}

TEST(CounterFactoryTest, ExplicitChoicesAndErrors) {
  EXPECT_EQ(
      make_token_counter("cl100k_base", "llama3", testing::tokenizer_data_dir()).counter->name(),
      "cl100k_base");
  const auto chars4 = make_token_counter("chars4", "gpt-4o", testing::tokenizer_data_dir());
  EXPECT_EQ(chars4.counter->name(), "chars4");
  EXPECT_EQ(chars4.counter->per_message(), 4);  // chat framing (and the role) in every counter
  EXPECT_EQ(chars4.counter->per_request(), 3);
  const auto estimate = make_token_counter("estimate", "gpt-4o", "/nonexistent");
  EXPECT_EQ(estimate.counter->name(), "estimate");  // needs no rank files
  EXPECT_EQ(estimate.counter->per_message(), 4);
  EXPECT_THROW(make_token_counter("o200k_base", "gpt-4o", "/nonexistent"), std::runtime_error);
  EXPECT_THROW(make_token_counter("bogus", "gpt-4o", testing::tokenizer_data_dir()),
               std::invalid_argument);
}

}  // namespace
}  // namespace autonous::tokens
