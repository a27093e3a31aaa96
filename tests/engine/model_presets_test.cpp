#include "internal/engine/model_presets.h"

#include <cstdio>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
      {"deepseek-chat", 128'000},
      {"qwen2.5-72b-instruct", 32'768},
      {"meta-llama/Meta-Llama-3.1-70B-Instruct", 131'072},
      {"llama3:8b", 8'192},
      {"OpenAI/GPT-4o", 128'000},
      {"google/gemma-3-27b-it", 131'072},
      {"gemma-3-1b-it", 32'768},
      {"google/gemma-2-9b-it", 8'192},
      {"gemma-3n-e4b-it", 32'768},
      {"google/gemma-3-270m-it", 32'768},
      {"mistral-large-latest", 262'144},
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
  for (const auto& p : *model_presets()) families.insert(std::string(p.family));
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
  EXPECT_EQ(b.source, "preset gpt-4o-mini");
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

// #31: the models the issue found stale or missing, as the vendors give them now.
TEST(ModelPresetsTest, CurrentWindowsForTheModelsTheIssueNamed) {
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"llama-4-maverick", 1'000'000},
      {"meta-llama/Llama-4-Maverick-17B-128E-Instruct", 1'000'000},
      {"mistral-large-latest", 262'144},
      {"gpt-oss-120b", 131'072},
      {"openai/gpt-oss-20b", 131'072},
      {"claude-opus-5", 1'000'000},
      {"claude-opus-4-6", 1'000'000},
      {"qwen3-235b-a22b-instruct-2507", 262'144},
      {"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", 262'144},
      {"qwen3-235b-a22b", 32'768},  // the April 2025 Qwen3: 32K native
      {"deepseek-chat", 128'000},
      {"deepseek-reasoner", 128'000},
      {"gpt-5.1", 400'000},
      {"gemini-2.5-pro", 1'048'576}};
  for (const auto& [model, window] : cases) {
    SCOPED_TRACE(model);
    const auto p = find_preset(model);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->window, window);
  }
}

// Every shipped entry says where its figures come from, and the file parses as shipped.
TEST(ModelPresetsTest, EveryShippedEntryHasASourceAndSaneFigures) {
  const auto doc = nlohmann::json::parse(shipped_models_json());
  ASSERT_TRUE(doc.at("models").is_array());
  EXPECT_EQ(doc.at("models").size(), model_presets()->size());
  for (const ModelPreset& p : *model_presets()) {
    SCOPED_TRACE(p.prefix);
    EXPECT_FALSE(p.source.empty());
    EXPECT_FALSE(p.family.empty());
    if (p.window > 0) {
      EXPECT_LT(p.reserve, p.window);
      EXPECT_GT(p.reserve, 0);
    }
    if (p.price) {
      EXPECT_LE(p.price->input, 100.0);  // USD per million: a per-token figure would be tiny
      EXPECT_LE(p.price->output, 300.0);
      if (p.price->cached_input) {
        EXPECT_LE(*p.price->cached_input, p.price->input);
      }
    }
  }
}

TEST(ModelPresetsTest, CostIsComputedFromThePricesPerMillion) {
  const ModelPrice price{2.50, 1.25, 10.00, std::nullopt};  // gpt-4o's
  // 1 000 prompt tokens of which 400 cached, 200 completion tokens, by hand:
  // 600 × 2.50 + 400 × 1.25 + 200 × 10.00 = 1 500 + 500 + 2 000 = 4 000 µUSD = 0.004 USD.
  common::Usage u{1000, 200, 1200, 400};
  ASSERT_TRUE(cost_usd(price, u).has_value());
  EXPECT_NEAR(*cost_usd(price, u), 0.004, 1e-12);
  EXPECT_NEAR(*cost_usd("gpt-4o-2024-08-06", u), 0.004, 1e-12);
  // No cached figure: all prompt tokens at the input price.
  u.cached_tokens.reset();
  EXPECT_NEAR(*cost_usd(price, u), (1000 * 2.50 + 200 * 10.00) / 1e6, 1e-12);
  // Cached tokens reported above the prompt are clamped to it.
  u.cached_tokens = 5000;
  EXPECT_NEAR(*cost_usd(price, u), (1000 * 1.25 + 200 * 10.00) / 1e6, 1e-12);
  // Cached tokens without a cached price: no figure rather than a wrong one.
  const ModelPrice no_cached{1.25, std::nullopt, 10.0, std::nullopt};
  EXPECT_FALSE(cost_usd(no_cached, common::Usage{1000, 10, 1010, 100}).has_value());
  EXPECT_NEAR(*cost_usd(no_cached, common::Usage{1000, 10, 1010, 0}), (1250 + 100) / 1e6, 1e-12);
  // Unknown model, a model without a price: none.
  EXPECT_FALSE(cost_usd("my-local-model", u).has_value());
  EXPECT_FALSE(cost_usd("llama-3.1-8b-instruct", u).has_value());
  // Embeddings are priced by their entry (input only).
  EXPECT_NEAR(*cost_usd("text-embedding-3-small", common::Usage{1'000'000, 0, 1'000'000, {}}), 0.02,
              1e-12);
}

// A price is its entry's model's: the name, or the name and a snapshot's date; never a longer
// name the prefix also matches (the review of #31 found o1-pro priced as o1, 10x too low).
TEST(ModelPresetsTest, APriceAppliesToItsOwnModelAndItsDatedSnapshotsOnly) {
  const common::Usage u{100'000, 0, 100'000, std::nullopt};
  for (const char* priced :
       {"gpt-4o", "gpt-4o-2024-08-06", "openai/gpt-4o", "GPT-4o-mini", "gpt-4.1-2025-04-14",
        "o3-mini", "o3-mini-2025-01-31", "claude-sonnet-4-5-20250929",
        "anthropic/claude-sonnet-4.5", "claude-haiku-4-5", "gpt-4o-2024-05-13"})
    EXPECT_TRUE(cost_usd(priced, u).has_value()) << priced;
  EXPECT_NEAR(*cost_usd("gpt-4o-2024-05-13", u), 0.5, 1e-9);  // its own $5, not gpt-4o's $2.50
  EXPECT_NEAR(*cost_usd("anthropic/claude-opus-4.5", u), 0.5, 1e-9);  // not Opus 4's $15
  for (const char* unpriced :
       {"o1-pro", "o3-pro", "o3-deep-research", "gpt-5-pro", "gpt-5.1-codex-mini", "gpt-5.3",
        "gpt-4o-audio-preview", "gemini-2.0-flash-lite", "claude-opus-5-1", "claude-haiku-4"})
    EXPECT_FALSE(cost_usd(unpriced, u).has_value()) << unpriced;
  // The window still carries over to them.
  EXPECT_EQ(find_preset("o1-pro")->window, 200'000);
  // A tiered price gives no figure above its tier.
  EXPECT_TRUE(cost_usd("claude-opus-4-6", common::Usage{200'000, 10, 200'010, {}}).has_value());
  EXPECT_FALSE(cost_usd("claude-opus-4-6", common::Usage{200'001, 10, 200'011, {}}).has_value());
}

TEST(ModelPresetsTest, ANewEntryStartsFromTheFamilyItsNameWouldMatch) {
  const auto merged =
      parse_models(R"({"models": [{"match": "o1-pro", "price": {"input": 150, "output": 600}}]})",
                   *model_presets());
  const ModelPreset& pro = merged.back();
  EXPECT_EQ(pro.prefix, "o1-pro");
  EXPECT_EQ(pro.window, 200'000);  // o1's, not 0
  EXPECT_EQ(pro.shape, RequestShape::kReasoning);
  EXPECT_TRUE(pro.source.empty());
  EXPECT_DOUBLE_EQ(pro.price->input, 150);
  EXPECT_THROW(parse_models(R"({"models": [{"match": "openai/", "window": 9, "reserve": 1}]})"),
               ModelsFileError);
  EXPECT_THROW(parse_models(R"({"models": [{"match": "m", "window": 200000000, "reserve": 1}]})"),
               ModelsFileError);
  EXPECT_THROW(
      parse_models(R"({"models": [{"match": "m", "price": {"input": 1e308, "output": 1}}]})"),
      ModelsFileError);
}

TEST(ModelPresetsTest, AnEmbeddingsEntryGivesNoWindow) {
  const auto b =
      resolve_prompt_budget({"text-embedding-3-small", std::nullopt, std::nullopt, std::nullopt});
  EXPECT_EQ(b.tokens, kUnknownModelBudget);
  EXPECT_EQ(b.source, "default");
}

TEST(ModelPresetsTest, AFileExtendsAndChangesTheShippedEntries) {
  const auto base = *model_presets();
  const auto merged = parse_models(R"({"models": [
      {"match": "gpt-4o", "price": {"input": 1.0, "cached_input": 0.5, "output": 4.0}},
      {"match": "my-local-model", "window": 32768, "reserve": 4096, "tokenizer": "qwen3"},
      {"match": "claude-opus-4-6", "price": null}]})",
                                   base);
  EXPECT_EQ(merged.size(), base.size() + 1);
  const auto find = [&](const std::string& m) {
    return *std::find_if(merged.begin(), merged.end(),
                         [&](const ModelPreset& p) { return p.prefix == m && !p.exact; });
  };
  // A price alone changes the price and keeps the window, reserve, shape and source.
  const ModelPreset gpt4o = find("gpt-4o");
  EXPECT_EQ(gpt4o.window, 128'000);
  EXPECT_EQ(gpt4o.shape, RequestShape::kOpenAI);
  EXPECT_FALSE(gpt4o.source.empty());
  EXPECT_DOUBLE_EQ(gpt4o.price->input, 1.0);
  EXPECT_EQ(find("my-local-model").window, 32'768);
  EXPECT_EQ(find("my-local-model").tokenizer, "qwen3");
  EXPECT_FALSE(find("claude-opus-4-6").price.has_value());  // null: no figure
}

TEST(ModelPresetsTest, ABadFileIsRefusedNamingTheEntryAndField) {
  const auto refused = [](const char* text) -> std::string {
    try {
      parse_models(text);
    } catch (const ModelsFileError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refused("{"), "not valid JSON");
  EXPECT_NE(refused(R"({"model": []})").find("\"models\" array"), std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"window": 1000, "reserve": 10}]})").find("models[0]"),
            std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m", "window": 1000, "reserve": 1000}]})")
                .find("\"reserve\""),
            std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m", "window": -5, "reserve": 1}]})").find("window"),
            std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m", "window": 9, "reserve": 1, "shape": "x"}]})")
                .find("shape"),
            std::string::npos);
  EXPECT_NE(
      refused(R"({"models": [{"match": "m", "window": 9, "reserve": 1, "tokenizer": "gpt2"}]})")
          .find("tokenizer"),
      std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m", "price": {"input": 1}}]})").find("output"),
            std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m", "price": {"input": -1, "output": 1}}]})")
                .find("\"input\""),
            std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m", "price": {"input": 1, "output": 1, "usd": 2}}]})")
                .find("usd"),
            std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m", "windw": 9}]})").find("windw"),
            std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m"}]})").find("window"), std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"match": "m", "window": 9, "reserve": 1},
                                   {"match": "M", "window": 9, "reserve": 1}]})")
                .find("second entry"),
            std::string::npos);
}

TEST(ModelPresetsTest, InstallingAFileAffectsLookupsUntilRestored) {
  const std::string path = ::testing::TempDir() + "autonous_models_test.json";
  {
    std::ofstream out(path);
    out << R"({"models": [{"match": "gpt-4o", "window": 64000, "reserve": 4000}]})";
  }
  install_models_file(path);
  EXPECT_EQ(find_preset("gpt-4o")->window, 64'000);
  EXPECT_TRUE(find_preset("gpt-4o")->price.has_value());  // kept from the shipped entry
  install_models_file("");
  EXPECT_EQ(find_preset("gpt-4o")->window, 128'000);
  {
    std::ofstream out(path);
    out << R"({"models": [{"match": "gpt-4o", "window": "big"}]})";
  }
  try {
    install_models_file(path);
    FAIL() << "accepted";
  } catch (const ModelsFileError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_EQ(find_preset("gpt-4o")->window, 128'000);  // a refused file changes nothing
  EXPECT_THROW(install_models_file(path + ".missing"), ModelsFileError);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace autonous::engine
