#include "internal/engine/model_presets.h"

#include <set>

#include <gtest/gtest.h>

namespace autonous::engine {
namespace {

TEST(ModelPresetsTest, FindsMainstreamFamiliesByLongestPrefix) {
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"gpt-4o-mini", 128'000},
      {"gpt-4o-2024-08-06", 128'000},
      {"gpt-4.1-nano", 1'047'576},
      {"o3-mini", 200'000},
      {"o1-mini", 128'000},
      {"gpt-4", 8'192},
      {"gpt-4-0613", 8'192},
      {"gpt-4-turbo-preview", 128'000},
      {"gpt-3.5-turbo-0125", 16'385},
      {"claude-3-5-sonnet-20241022", 200'000},
      {"claude-sonnet-4-20250514", 200'000},
      {"gemini-1.5-pro-002", 2'097'152},
      {"gemini-2.0-flash", 1'048'576},
      {"deepseek-chat", 65'536},
      {"qwen2.5-72b-instruct", 32'768},
      {"meta-llama/Meta-Llama-3.1-70B-Instruct", 131'072},
      {"llama3:8b", 8'192},
      {"OpenAI/GPT-4o", 128'000},
      {"google/gemma-3-27b-it", 131'072},
      {"gemma-3-1b-it", 32'768},
      {"google/gemma-2-9b-it", 8'192},
      {"gemma-3n-e4b-it", 32'768},
      {"google/gemma-3-270m-it", 32'768},
      {"mistral-large-latest", 131'072},
      {"mistral-large-2402", 32'768},
      {"mistralai/Mistral-Large-Instruct-2411", 131'072},
      {"mistral-small-latest", 32'768},
      {"codestral-2501", 256'000},
      {"codestral-latest", 256'000},
      {"codestral-2405", 32'768},
      {"mistralai/Codestral-22B-v0.1", 32'768},
      {"open-mixtral-8x22b", 65'536}};
  for (const auto& [model, window] : cases) {
    SCOPED_TRACE(model);
    const auto p = find_preset(model);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->window, window);
    EXPECT_LT(p->reserve, p->window);
  }
  EXPECT_FALSE(find_preset("my-local-model").has_value());
  // Ollama's local names (name:tag) match no Gemma or Mistral preset: its server cuts a prompt to
  // num_ctx without a word, and a known window would let calibration lower the scale from a cut
  // count (docs/tokens.md). Each of these would match by prefix without the rule.
  for (const char* ollama : {"gemma-3:27b", "ministral-3:8b", "mistral-large:123b", "codestral:22b",
                             "mistral-small:24b", "mistral-nemo:12b"})
    EXPECT_FALSE(find_preset(ollama).has_value()) << ollama;
  EXPECT_FALSE(find_preset("").has_value());
}

TEST(ModelPresetsTest, EveryFamilyTheIssueNamesIsCovered) {
  std::set<std::string> families;
  for (const auto& p : model_presets()) families.insert(std::string(p.family));
  for (const char* f : {"GPT-4o", "GPT-4.1", "o-series", "GPT-4", "GPT-3.5", "Claude 3", "Claude 4",
                        "Gemini", "DeepSeek", "Qwen", "Llama 3", "Gemma", "Mistral"})
    EXPECT_TRUE(families.count(f)) << f;
}

TEST(ModelPresetsTest, BudgetRules) {
  // MAX_CONTEXT_TOKENS when set.
  PromptBudget b = resolve_prompt_budget({"gpt-4o-mini", 8000, std::nullopt, std::nullopt});
  EXPECT_EQ(b.tokens, 8000);
  EXPECT_EQ(b.source, "MAX_CONTEXT_TOKENS");
  EXPECT_EQ(b.ceiling, 128'000 - 16'384);
  // Unset: the preset's window − reserve.
  b = resolve_prompt_budget({"gpt-4o-mini", std::nullopt, std::nullopt, std::nullopt});
  EXPECT_EQ(b.tokens, 128'000 - 16'384);
  EXPECT_EQ(b.source, "preset gpt-4o");
  // Unknown model: 8000.
  b = resolve_prompt_budget({"my-local-model", std::nullopt, std::nullopt, std::nullopt});
  EXPECT_EQ(b.tokens, 8000);
  EXPECT_EQ(b.source, "default");
  EXPECT_EQ(b.ceiling, 0);
  // CONTEXT_WINDOW and RESERVE_OUTPUT_TOKENS override the preset.
  b = resolve_prompt_budget({"gpt-4o-mini", std::nullopt, 32'000, 2'000});
  EXPECT_EQ(b.tokens, 30'000);
  EXPECT_EQ(b.source, "CONTEXT_WINDOW");
  b = resolve_prompt_budget({"gpt-4o-mini", std::nullopt, std::nullopt, 28'000});
  EXPECT_EQ(b.tokens, 100'000);
  // An unknown model with a window: a quarter kept for the reply unless told.
  b = resolve_prompt_budget({"my-local-model", std::nullopt, 4096, std::nullopt});
  EXPECT_EQ(b.tokens, 3072);
  // MAX_CONTEXT_TOKENS above window − reserve is lowered to it.
  b = resolve_prompt_budget({"gpt-4", 50'000, std::nullopt, std::nullopt});
  EXPECT_EQ(b.tokens, 8'192 - 1'024);
  EXPECT_TRUE(b.clamped);
  // A reserve that leaves nothing is refused.
  EXPECT_THROW(resolve_prompt_budget({"gpt-4", std::nullopt, std::nullopt, 8'192}),
               std::invalid_argument);
}

}  // namespace
}  // namespace autonous::engine
