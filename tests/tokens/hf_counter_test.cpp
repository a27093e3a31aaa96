#include "internal/tokens/hf_counter.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "internal/tokens/counter_factory.h"
#include "tests/support/temp_dir.h"
#include "tests/support/token_data.h"

namespace autonous::tokens {
namespace {

const std::string kCorpus = std::string(AUTONOUS_SOURCE_DIR) + "/tests/data/tokens";

// Each family loaded once per test process, and only when a test asks for it (a load parses
// 8-11 MB of JSON: ctest runs every case in its own process).
const HfCounter& counter(const std::string& family) {
  static std::map<std::string, std::unique_ptr<HfCounter>> loaded;
  auto& c = loaded[family];
  if (!c) c = load_hf_counter(family, testing::tokenizer_data_dir());
  return *c;
}

std::vector<std::string> pieces(std::string_view text, SplitPattern p) {
  std::vector<std::string> out;
  pretokenize(text, p, [&](std::string_view s) { out.emplace_back(s); });
  return out;
}

// The families the corpus is counted with. The sanitizer pass (scripts/test) checks memory
// safety, not the counts the release pass already compared: there, DeepSeek V3 alone (the most
// involved pre-tokenizer), which keeps the CI budget.
#if defined(__SANITIZE_ADDRESS__)
const std::vector<std::string> kCorpusFamilies = {"deepseek_v3"};
#else
const std::vector<std::string> kCorpusFamilies = {"llama3", "qwen3", "deepseek_v3"};
#endif

TEST(HfCounterTest, MatchesTheReferenceOnEveryCorpusAndHoldoutFileForEveryFamily) {
  const auto expected = nlohmann::json::parse(testing::read_file(kCorpus + "/expected_hf.json"));
  ASSERT_GE(expected["files"].size(), 40u);
  for (const auto& [file, counts] : expected["files"].items()) {
    const std::string text = common::sanitize_utf8(testing::read_file(kCorpus + "/" + file));
    for (const std::string& family : kCorpusFamilies)
      EXPECT_EQ(counter(family).count_text(text), counts[family].get<int64_t>())
          << file << " " << family;
  }
}

TEST(HfCounterTest, KnownTextsNormalisationLongRunsAndFraming) {
  // Token ids from @lenml/tokenizers 3.7.2 (tests/data/tokens/reference_hf.mjs's library).
  const std::string text = "Hello, my dog's cute 12345 <|im_start|> 你好世界 ok\n\n  x";
  EXPECT_EQ(counter("llama3").count_text(text), 21);
  EXPECT_EQ(counter("qwen3").count_text(text), 21);  // <|im_start|> is one (added) token
  EXPECT_EQ(counter("deepseek_v3").count_text(text), 22);
  EXPECT_EQ(counter("llama3").count_text(""), 0);
  // Qwen normalises to NFC first: "é" as e + U+0301 is the same text as U+00E9.
  EXPECT_EQ(counter("qwen3").count_text("caf\u00e9 au lait"),
            counter("qwen3").count_text("cafe\u0301 au lait"));
  // Llama 3 has no normaliser: the decomposed form costs more.
  EXPECT_LT(counter("llama3").count_text("caf\u00e9 au lait"),
            counter("llama3").count_text("cafe\u0301 au lait"));
  // A long run of one letter (one piece) is counted without the quadratic merge.
#if defined(__SANITIZE_ADDRESS__)
  const std::string run(1 << 14, 'a');
#else
  const std::string run(1 << 18, 'a');
#endif
  for (const std::string family : {"llama3", "qwen3", "deepseek_v3"})
    EXPECT_GT(counter(family).count_text(run), 1000) << family;
  // Framing from each family's chat template.
  EXPECT_EQ(counter("llama3").per_message(), 5);
  EXPECT_EQ(counter("llama3").per_request(), 25);  // 5 + Llama 3.1-3.3's date lines
  EXPECT_EQ(counter("qwen3").per_message(), 5);
  EXPECT_EQ(counter("qwen3").per_request(), 3);
  EXPECT_EQ(counter("deepseek_v3").per_message(), 2);
  EXPECT_EQ(counter("deepseek_v3").per_request(), 2);
}

TEST(HfCounterTest, ModelNamesMapToTheirFamilies) {
  auto family = [](const char* m) {
    const HfFamily* f = hf_family_for_model(m);
    return f == nullptr ? std::string("-") : std::string(f->name);
  };
  for (const char* m :
       {"meta-llama/Llama-3.1-8B-Instruct", "llama3.2:3b", "llama-3.3-70b-versatile",
        "accounts/fireworks/models/llama-v3p1-70b-instruct", "@cf/meta/llama-3.1-8b-instruct",
        "DeepSeek-R1-Distill-Llama-70B"})
    EXPECT_EQ(family(m), "llama3") << m;
  for (const char* m : {"Qwen/Qwen2.5-7B-Instruct", "qwen3-235b-a22b-instruct-2507", "qwen-max",
                        "qwq-32b", "deepseek-r1-distill-qwen-32b"})
    EXPECT_EQ(family(m), "qwen3") << m;
  for (const char* m :
       {"deepseek-chat", "deepseek-reasoner", "deepseek-ai/DeepSeek-V3.1", "deepseek/deepseek-r1"})
    EXPECT_EQ(family(m), "deepseek_v3") << m;
  // Ollama's deepseek-r1 tags under 671b are distills.
  EXPECT_EQ(family("deepseek-r1:7b"), "qwen3");
  EXPECT_EQ(family("deepseek-r1:70b"), "llama3");
  EXPECT_EQ(family("deepseek-r1:671b"), "deepseek_v3");
  for (const char* m :
       {"llama-4-maverick", "meta-llama/Llama-2-7b", "claude-opus-4", "mistral-large",
        "deepseek-coder", "gemma-3", "", "huggyllama/llama-30b", "deepseek-ai/DeepSeek-V2-Chat",
        "deepseek-llm-7b-chat", "qwen-7b-chat", "Qwen/Qwen1.5-7B-Chat"})
    EXPECT_EQ(family(m), "-") << m;
}

TEST(HfCounterTest, AutoPicksTheFamilyAndNamedFamiliesLoad) {
  auto c = make_token_counter("auto", "deepseek-ai/DeepSeek-V3.1", testing::tokenizer_data_dir());
  EXPECT_EQ(c.counter->name(), "deepseek_v3");
  EXPECT_TRUE(c.warning.empty()) << c.warning;
  c = make_token_counter("deepseek_v3", "anything", testing::tokenizer_data_dir());
  EXPECT_EQ(c.counter->name(), "deepseek_v3");
  // OpenAI's models keep their encodings.
  c = make_token_counter("auto", "gpt-4o", testing::tokenizer_data_dir());
  EXPECT_EQ(c.counter->name(), "o200k_base");
}

TEST(HfCounterTest, MissingOrWrongFilesAreClearErrors) {
  testing::TempDir dir;
  EXPECT_THROW(load_hf_counter("gemma9", dir.path()), std::invalid_argument);
  try {
    (void)load_hf_counter("llama3", dir.path());
    FAIL() << "a missing file loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("llama3.tokenizer.json is missing"), std::string::npos)
        << e.what();
  }
  // auto falls back to the estimate, saying why.
  const auto c = make_token_counter("auto", "llama3.1:8b", dir.path());
  EXPECT_EQ(c.counter->name(), "estimate");
  EXPECT_NE(c.warning.find("llama3.tokenizer.json"), std::string::npos) << c.warning;
  // Another family's file under this family's name is refused by its pre-tokenizer.
  std::filesystem::copy_file(
      std::filesystem::path(testing::tokenizer_data_dir()) / "deepseek_v3.tokenizer.json",
      std::filesystem::path(dir.path()) / "llama3.tokenizer.json");
  try {
    (void)load_hf_counter("llama3", dir.path());
    FAIL() << "a DeepSeek file loaded as Llama 3";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not the llama3 one"), std::string::npos) << e.what();
  }
  std::ofstream(std::filesystem::path(dir.path()) / "qwen3.tokenizer.json") << "{\"model\": 3";
  EXPECT_THROW(load_hf_counter("qwen3", dir.path()), std::runtime_error);
}

TEST(HfPretokenizerTest, QwenTakesOneDigitAPiece) {
  EXPECT_EQ(pieces("abc 12345", SplitPattern::kQwen2),
            (std::vector<std::string>{"abc", " ", "1", "2", "3", "4", "5"}));
  EXPECT_EQ(pieces("abc 12345", SplitPattern::kCl100k),
            (std::vector<std::string>{"abc", " ", "123", "45"}));
}

TEST(HfPretokenizerTest, DeepSeekSplitsNumbersCjkThenWords) {
  EXPECT_EQ(pieces("abc 12345 你好世界ok, x.y\n\n  z", SplitPattern::kDeepSeekV3),
            (std::vector<std::string>{"abc", " ", "123", "45", " ", "你好世界", "ok", ",", " x",
                                      ".y", "\n\n", " ", " z"}));
  // Pieces always concatenate to the input.
  const std::string mixed = "a\x01\x02 b\u200d\u0301c 1\u00b2\u30fb\u30ab\t\r\n";
  std::string joined;
  for (const auto& p : pieces(mixed, SplitPattern::kDeepSeekV3)) joined += p;
  EXPECT_EQ(joined, mixed);
}

}  // namespace
}  // namespace autonous::tokens
