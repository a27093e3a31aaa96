// MustFit, as a property: whatever the history, settings and message sizes, the prompt the
// engine builds never exceeds the budget by the configured counter; the system prompt is never
// cut; kept history is the newest contiguous run (with cuts marked); every text is valid UTF-8.
// Thousands of random conversations: empty to megabytes, many scripts and broken bytes, tiny to
// huge budgets, random thresholds and strategies.

#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "internal/common/utf8.h"
#include "internal/engine/assembler.h"
#include "internal/engine/context_builder.h"
#include "internal/engine/level_compressor.h"
#include "internal/engine/summary.h"
#include "internal/tokens/bpe_counter.h"
#include "internal/tokens/estimator.h"
#include "internal/tokens/token_counter.h"
#include "tests/engine/memory_summary_store.h"
#include "tests/engine/vector_provider.h"
#include "tests/support/property_scale.h"
#include "tests/support/token_data.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

// Pieces of text from many scripts, plus invalid bytes and structured text.
const std::vector<std::string>& pieces() {
  static const std::vector<std::string> p = {
      "hello ",
      "world",
      " ",
      "\n",
      "42",
      "3.14159 ",
      "don't ",
      "https://example.com/a?b=c ",
      "\xE4\xBD\xA0\xE5\xA5\xBD",                                      // 你好
      "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF",  // こんにちは
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 ",             // Привет
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 ",                     // مرحبا
      "\xF0\x9F\x98\x80",
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",
      "e\xCC\x81",
      "\xEA\xB0\x80\xEB\x82\x98 ",  // 가나
      "{\"key\": [1, 2, {\"x\": null}]} ",
      "for (int i = 0; i < n; ++i) { }\n",
      "\xFF",
      "\xC3",
      "\xE4\xBD",
      "\xF0\x9F\x98",
      "\x00 nul ",
      "\t\t",
      std::string(64, ' '),
      std::string(40, '='),
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
  return p;
}

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  std::string text(size_t target_bytes) {
    std::string s;
    s.reserve(target_bytes + 64);
    const auto& p = pieces();
    // A conversation tends to stay in one script: bias towards a few pieces per text.
    const size_t a = rng_() % p.size();
    const size_t b = rng_() % p.size();
    while (s.size() < target_bytes) {
      const uint32_t r = rng_() % 10;
      s += r < 4 ? p[a] : r < 7 ? p[b] : p[rng_() % p.size()];
    }
    return s;
  }
  // Mostly chat-sized, sometimes large, rarely megabytes.
  size_t size(bool allow_huge) {
    const uint32_t r = rng_() % 1000;
    if (r < 5 && allow_huge) return 1'000'000 + rng_() % 1'000'000;
    if (r < 60) return 10'000 + rng_() % 90'000;
    if (r < 120) return 0;
    return rng_() % 2'000;
  }
  int64_t between(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  double share(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
};

ContextPolicy random_policy(Generator& g, int64_t floor_budget) {
  ContextPolicy p;
  p.strategy = static_cast<Strategy>(g.between(0, 2));
  p.recent_messages = static_cast<int>(g.between(1, 100));
  switch (g.between(0, 3)) {
    case 0:
      p.max_tokens = floor_budget + g.between(0, 40);
      break;  // tiny
    case 1:
      p.max_tokens = floor_budget + g.between(0, 2'000);
      break;  // small
    case 2:
      p.max_tokens = floor_budget + g.between(0, 200'000);
      break;  // large
    default:
      p.max_tokens = floor_budget + g.between(0, 2'000'000);
      break;  // huge
  }
  if (g.between(0, 1) == 0) {
    // Random valid thresholds: 0 < target <= soft <= warn <= hard <= 1.
    double v[4] = {g.share(0.01, 1.0), g.share(0.01, 1.0), g.share(0.01, 1.0), g.share(0.01, 1.0)};
    std::sort(v, v + 4);
    p.thresholds = Thresholds{v[1], v[2], v[3], v[0]};
  }
  return p;
}

struct Outcome {
  int64_t cases = 0;
  int64_t by_level[4] = {0, 0, 0, 0};
  int64_t user_cut = 0;
};

// Builds `rounds` random conversations with `counter` and checks every property on each.
void check_must_fit(const tokens::TokenCounter& counter, uint32_t seed, int rounds, bool allow_huge,
                    Outcome& outcome) {
  Generator g(seed);
  VectorProvider provider;
  const LevelCompressor compressor(counter);
  const StandardAssembler assembler;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round));
    provider.history.clear();
    const int64_t n = g.between(0, 3) == 0 ? 0 : g.between(1, 120);
    bool huge_used = false;
    for (int64_t i = 0; i < n; ++i) {
      const size_t size = g.size(allow_huge && !huge_used);
      huge_used = huge_used || size >= 1'000'000;
      provider.history.push_back(
          {i % 2 == 0 ? Role::kUser : Role::kAssistant, g.text(size), i + 1});
    }
    provider.state = {};
    if (g.between(0, 4) == 0 && n > 0) provider.state.cleared_through = g.between(0, n);
    if (g.between(0, 3) == 0 && n > provider.state.cleared_through) {
      // A chat that compacted before: the normal level cuts its oversized messages.
      provider.state.context.chain_start = provider.state.cleared_through;
      provider.state.context.verbatim_after = g.between(provider.state.cleared_through + 1, n);
      provider.state.context.cut_through = g.between(provider.state.context.verbatim_after, n + 2);
    }
    const int64_t read_after =
        std::max(provider.state.cleared_through, provider.state.context.verbatim_after);

    ContextSettings s;
    s.system_prompt = g.text(g.between(0, 3) == 0 ? 0 : static_cast<size_t>(g.between(1, 3000)));
    s.history_window = static_cast<int>(g.between(0, 150));
    s.max_chars_per_message = g.between(0, 2) == 0   ? 0
                              : g.between(0, 5) == 0 ? 100'000'000
                                                     : g.between(1, 20'000);
    const int64_t floor_budget = min_budget(s.system_prompt, counter);
    s.policy = random_policy(g, floor_budget);
    const std::string user = g.text(g.size(allow_huge && !huge_used));
    BuildOptions options;
    if (g.between(0, 9) == 0) {
      options.min_level = static_cast<Level>(g.between(0, 3));
      options.budget_scale = g.share(0.05, 1.0);
    }

    const ContextBuilder builder(s, provider, compressor, assembler, counter);
    const BuiltContext b = builder.build("chat", user, options);

    ASSERT_LE(b.figures.estimated_tokens, b.figures.budget_tokens);
    ASSERT_LE(b.figures.budget_tokens, s.policy.max_tokens);
    ASSERT_EQ(b.figures.estimated_tokens, counter.count_prompt(b.messages));
    ASSERT_LE(b.figures.estimated_tokens, b.figures.tokens_before);
    for (const auto& m : b.messages) ASSERT_TRUE(common::is_valid_utf8(m.content));
    size_t i = 0;
    const std::string system = common::sanitize_utf8(s.system_prompt);
    if (!system.empty()) {  // never cut, always first
      ASSERT_EQ(b.messages[0].role, Role::kSystem);
      ASSERT_EQ(b.messages[0].content, system);
      i = 1;
    }
    // Kept history: the newest contiguous run of what was read.
    std::vector<Message> read;
    for (const auto& m : provider.history)
      if (m.history_id > read_after) read.push_back(m);
    const int limit = s.history_window > 0 ? read_limit(count_marks(s, b.chat.policy)) : 0;
    if (b.figures.user_truncated) read.clear();
    if (static_cast<int>(read.size()) > limit) read.erase(read.begin(), read.end() - limit);
    ASSERT_EQ(b.figures.original_count, static_cast<int64_t>(read.size()));
    ASSERT_EQ(b.figures.compressed_count + b.figures.dropped_count, b.figures.original_count);
    for (int64_t k = 0; k < b.figures.compressed_count; ++k) {
      const Message& kept = b.messages[i + static_cast<size_t>(k)];
      const Message& orig = read[static_cast<size_t>(b.figures.dropped_count + k)];
      ASSERT_EQ(kept.history_id, orig.history_id);
      ASSERT_EQ(kept.role, orig.role);
    }
    if (b.figures.compressed_count > 0) {
      ASSERT_EQ(b.messages[i].role, Role::kUser);
    }
    const Message& last = b.messages.back();
    if (!common::sanitize_utf8(user).empty() && !b.figures.user_truncated) {
      ASSERT_EQ(last.content, common::sanitize_utf8(user));
    }
    if (b.figures.user_truncated) {
      ASSERT_EQ(b.figures.compressed_count, 0);  // history goes before the user message is cut
      ++outcome.user_cut;
    }
    ++outcome.cases;
    ++outcome.by_level[static_cast<int>(b.figures.level)];
  }
}

void expect_every_level(const Outcome& o) {
  if (!testing::full_property_run()) return;  // a sample need not reach every level
  for (int level = 0; level < 4; ++level)
    EXPECT_GT(o.by_level[level], 0) << "level " << to_string(static_cast<Level>(level))
                                    << " never reached: the generator does not cover it";
  EXPECT_GT(o.user_cut, 0);
}

TEST(MustFitProperty, CharsOver4WithFraming) {
  const tokens::CharsOver4Counter counter(tokens::kFramingPerMessage, tokens::kFramingPerRequest);
  Outcome o;
  check_must_fit(counter, 20261122, testing::property_cases(3000), true, o);
  EXPECT_EQ(o.cases, testing::property_cases(3000));
  expect_every_level(o);
}

TEST(MustFitProperty, ScriptAwareEstimator) {
  const tokens::EstimateCounter counter;
  Outcome o;
  check_must_fit(counter, 7, testing::property_cases(1500), true, o);
  EXPECT_EQ(o.cases, testing::property_cases(1500));
  expect_every_level(o);
}

TEST(MustFitProperty, ExactO200k) {
  std::unique_ptr<tokens::BpeCounter> counter;
  try {
    counter = tokens::load_bpe_counter("o200k_base", testing::tokenizer_data_dir());
  } catch (const std::exception& e) {
    GTEST_SKIP() << "o200k_base rank file not installed (scripts/bootstrap fetches it): "
                 << e.what();
  }
  Outcome o;
  check_must_fit(*counter, 99, testing::property_cases(300), false, o);
  EXPECT_EQ(o.cases, testing::property_cases(300));
}

// The summarize strategy with a store and a summarizer whose answers are random in size
// (including over-long and empty) and that sometimes fails: MustFit holds all the same.
class RandomSummarizer final : public Summarizer {
 public:
  explicit RandomSummarizer(Generator& g) : g_(g) {}
  SummaryCall summarize(const std::string& /*previous*/,
                        const std::vector<Message>& /*evicted*/) override {
    if (g_.between(0, 9) == 0) throw SummaryFailure("down");
    return {g_.text(static_cast<size_t>(g_.between(0, 6000))), "m", std::nullopt, {}};
  }
  int64_t input_budget() const override { return 2000; }

 private:
  Generator& g_;
};

using MemorySummaries = MemorySummaryStore;

TEST(MustFitProperty, SummarizeWithRandomSummariesAndFailures) {
  const tokens::CharsOver4Counter counter(tokens::kFramingPerMessage, tokens::kFramingPerRequest);
  Generator g(314);
  VectorProvider provider;
  MemorySummaries store(provider);
  RandomSummarizer summarizer(g);
  const LevelCompressor compressor(counter);
  const StandardAssembler assembler;
  int summarized = 0;
  for (int round = 0; round < testing::property_cases(1000); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (g.between(0, 4) == 0) {  // a new conversation now and then; otherwise it grows
      provider.history.clear();
      store.rows.clear();
    }
    const int64_t n = g.between(0, 30);
    for (int64_t i = 0; i < n; ++i) {
      const auto id = static_cast<int64_t>(provider.history.size()) + 1;
      provider.history.push_back(
          {id % 2 ? Role::kUser : Role::kAssistant, g.text(g.size(false) / 4), id});
    }
    ContextSettings s;
    s.system_prompt = g.text(static_cast<size_t>(g.between(0, 400)));
    s.history_window = static_cast<int>(g.between(1, 80));
    s.max_chars_per_message = g.between(100, 8000);
    s.policy = random_policy(g, min_budget(s.system_prompt, counter));
    s.policy.strategy = Strategy::kSummarize;
    s.summary.max_tokens = g.between(64, 1000);
    ContextBuilder builder(s, provider, compressor, assembler, counter,
                           {.summaries = &store, .summarizer = &summarizer});
    const BuiltContext b = builder.build("chat", g.text(g.size(false) / 2));
    ASSERT_LE(b.figures.estimated_tokens, b.figures.budget_tokens);
    ASSERT_EQ(b.figures.estimated_tokens, counter.count_prompt(b.messages));
    for (const auto& m : b.messages) ASSERT_TRUE(common::is_valid_utf8(m.content));
    const std::string system = common::sanitize_utf8(s.system_prompt);
    if (!system.empty()) {
      ASSERT_EQ(b.messages[0].content, system);
    }
    summarized += b.summarized ? 1 : 0;
  }
  if (testing::full_property_run()) {
    EXPECT_GT(summarized, 5);  // with hysteresis, compactions are rare: coverage, not a rate
  }
}

TEST(MustFitProperty, ABudgetTooSmallForTheSystemPromptIsRefusedNotBuilt) {
  const tokens::CharsOver4Counter counter(tokens::kFramingPerMessage, tokens::kFramingPerRequest);
  Generator g(5);
  for (int round = 0; round < 200; ++round) {
    ContextSettings s;
    s.system_prompt = g.text(static_cast<size_t>(g.between(0, 4000)));
    const int64_t floor_budget = min_budget(s.system_prompt, counter);
    s.policy.max_tokens = std::max<int64_t>(1, floor_budget - g.between(1, floor_budget));
    EXPECT_THROW(check_budget(s, counter), PolicyError);
    s.policy.max_tokens = floor_budget;
    EXPECT_NO_THROW(check_budget(s, counter));
  }
}

}  // namespace
}  // namespace autonous::engine
