// The engine across turns, as a property: random conversations grown turn by turn (each turn's
// user message and reply appended, as the worker stores them), with random settings, chat
// overrides changed now and then, calibration scales, summary failures and provider overflows.
// On every turn the prompt fits its budget and kept history starts on a user message; between
// compactions (and while settings and scale stay) the prompt only grows at its end. Some turns
// call tools (#29): the assistant's calls and their results, a few large, now and then a broken
// unit or a front end's tool row without its call; every prompt pairs each call with all its
// results and carries no orphan result. The seed varies per run (AUTONOUS_PROPERTY_SEED fixes
// it) and a failure prints it.

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "internal/engine/assembler.h"
#include "internal/engine/context_builder.h"
#include "internal/engine/level_compressor.h"
#include "internal/engine/summary.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/tokens/token_counter.h"
#include "tests/engine/memory_summary_store.h"
#include "tests/engine/vector_provider.h"
#include "tests/recall/memory_searcher.h"
#include "tests/support/property_scale.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

uint32_t run_seed() {
  if (const char* s = std::getenv("AUTONOUS_PROPERTY_SEED"))
    return static_cast<uint32_t>(std::stoul(s));
  return std::random_device{}();
}

using Store = MemorySummaryStore;

class FlakySummarizer final : public Summarizer {
 public:
  explicit FlakySummarizer(std::mt19937& rng) : rng_(rng) {}
  SummaryCall summarize(const std::string&, const std::vector<Message>& evicted) override {
    ++calls;
    if (rng_() % 4 == 0) throw SummaryFailure("down");
    return {"summary of " + std::to_string(evicted.size()) + " " + std::string(rng_() % 800, 's'),
            "m",
            std::nullopt,
            {}};
  }
  int64_t input_budget() const override { return 3000; }
  int calls = 0;

 private:
  std::mt19937& rng_;
};

std::string words(std::mt19937& rng, int lo, int hi) {
  static const char* w[] = {"river", "stone", "你好", "garden", "Привет", "coffee", "ticket", "42"};
  std::string s;
  const int n = lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1));
  for (int i = 0; i < n; ++i) (s += w[rng() % 8]) += ' ';
  return s;
}

struct Tally {
  int turns = 0, compactions = 0, grown = 0, summarized = 0, recalled = 0, custom = 0, units = 0;
  int cleared = 0;  // prompts that carried old tool results cleared
};

// Whether `messages` are as the wire takes them: each assistant message with calls is followed
// by exactly one result per call, and each tool message answers a call of that run.
::testing::AssertionResult paired(const std::vector<Message>& messages, int& units) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    if (m.role == Role::kTool)
      return ::testing::AssertionFailure() << "orphan tool message at " << i;
    if (m.tool_calls.empty()) continue;
    if (m.role != Role::kAssistant)
      return ::testing::AssertionFailure() << "calls on a non-assistant message at " << i;
    std::set<std::string> ids;
    for (const auto& c : nlohmann::json::parse(m.tool_calls)) ids.insert(c["id"]);
    size_t j = i + 1;
    for (; j < messages.size() && messages[j].role == Role::kTool; ++j)
      if (ids.erase(messages[j].tool_call_id) != 1)
        return ::testing::AssertionFailure() << "result " << j << " answers no call of " << i;
    if (!ids.empty())
      return ::testing::AssertionFailure() << "call at " << i << " without all its results";
    ++units;
    i = j - 1;
  }
  return ::testing::AssertionSuccess();
}

// Appends a tool-using turn's steps to `history`: the assistant's calls, their results (in any
// order), now and then broken (a result missing) or with a front end's tool row without a call.
void tool_steps(std::mt19937& rng, std::vector<Message>& history, int64_t& id) {
  const int calls = 1 + static_cast<int>(rng() % 3);
  nlohmann::json json = nlohmann::json::array();
  std::vector<std::string> ids;
  for (int c = 0; c < calls; ++c) {
    ids.push_back("call_" + std::to_string(id + 1) + "_" + std::to_string(c));
    json.push_back({{"id", ids.back()},
                    {"type", "function"},
                    {"function", {{"name", "lookup"}, {"arguments", R"({"q":"order 42"})"}}}});
  }
  Message call{Role::kAssistant, rng() % 2 ? "" : words(rng, 1, 10), ++id};
  call.tool_calls = json.dump();
  history.push_back(call);
  std::shuffle(ids.begin(), ids.end(), rng);
  const bool broken = rng() % 15 == 0;
  for (size_t c = broken ? 1 : 0; c < ids.size(); ++c) {
    Message result{Role::kTool, words(rng, 3, rng() % 8 == 0 ? 2500 : 80), ++id};
    result.tool_call_id = ids[c];
    history.push_back(result);
  }
  if (rng() % 20 == 0) history.push_back({Role::kTool, "a front end's row", ++id});
}

void one_chat(std::mt19937& rng, Tally& t) {
  VectorProvider provider;
  Store store(provider);
  FlakySummarizer summarizer(rng);
  tokens::CharsOver4Counter base(tokens::kFramingPerMessage, tokens::kFramingPerRequest);
  tokens::ScaledCounter counter(base);
  const LevelCompressor compressor(counter);
  const StandardAssembler assembler;
  ContextSettings s;
  s.system_prompt = words(rng, 0, 30);
  s.history_window = static_cast<int>(4 + rng() % 120);
  s.keep_recent_messages = static_cast<int>(rng() % 10);
  s.policy.strategy = static_cast<Strategy>(rng() % 3);
  s.policy.max_tokens = min_budget(s.system_prompt, counter) + 300 + rng() % 8000;
  s.policy.recent_messages = 1 + rng() % 30;
  s.summary.max_tokens = 64 + rng() % 300;
  s.recall.max_hits = static_cast<int>(rng() % 8);
  // Every layout: one chat in four sectioned, one in eight minimal.
  const uint32_t layout = rng() % 8;
  s.layout = layout < 2 ? Layout::kSectioned : layout == 2 ? Layout::kMinimal : Layout::kDefault;
  recall::MemorySearcher searcher(provider.history);  // recall on, as by default
  ContextBuilder builder(s, provider, compressor, assembler, counter,
                         {.summaries = &store, .summarizer = &summarizer, .searcher = &searcher});
  if (rng() % 3 == 0) provider.state.pins = {words(rng, 1, 40), words(rng, 1, 400)};
  if (rng() % 3 == 0)
    provider.state.custom = {{1, "notes", words(rng, 1, 60)}, {2, "catalogue", words(rng, 1, 800)}};
  std::vector<Message> previous;
  BuiltContext last;
  bool last_changed = false;
  int64_t id = 0;
  for (int turn = 0; turn < 120; ++turn) {
    SCOPED_TRACE("turn " + std::to_string(turn));
    bool changed = false;  // something besides the history changed: the prefix may too
    if (rng() % 40 == 0) {
      provider.state.settings_json = rng() % 2 ? R"({"strategy":"summarize"})" : "{}";
      changed = true;
    }
    if (rng() % 30 == 0) {
      counter.set_scale(1.0 + (rng() % 50) / 100.0);
      changed = true;
    }
    BuildOptions options;
    if (rng() % 25 == 0) {  // the provider refused the last prompt
      options.min_level = Level::kAggressive;
      options.budget_scale = 0.6;
      changed = true;
    }
    const std::string user =
        "turn " + std::to_string(turn) + ": " + words(rng, 5, rng() % 20 == 0 ? 900 : 60);
    const BuiltContext b = builder.build("chat", user, options);
    if (std::getenv("AUTONOUS_PROPERTY_TRACE"))
      std::cout << "turn " << turn << " level " << to_string(b.figures.level) << " cut "
                << b.figures.truncated_count << " kept " << b.figures.compressed_count
                << " compaction " << to_string(b.state.compaction) << " budget "
                << b.figures.budget_tokens << " strategy " << to_string(b.chat.strategy)
                << " changed " << changed << "\n";
    ASSERT_LE(b.figures.estimated_tokens, b.figures.budget_tokens);
    t.recalled += !b.evidence.items.empty();
    t.custom += !b.custom.ids.empty();
    t.cleared += !b.figures.tool_results_cleared.empty();
    // Recall never offers what is verbatim in the prompt.
    for (const recall::RecallItem& item : b.evidence.items) {
      for (const auto& m : b.messages) {
        if (m.history_id != 0) {
          ASSERT_NE(item.message.history_id, m.history_id);
        }
      }
    }
    ASSERT_EQ(b.figures.estimated_tokens, counter.count_prompt(b.messages));
    const size_t first = b.messages.empty() || b.messages[0].role != Role::kSystem ? 0 : 1;
    if (b.figures.compressed_count > 0) {
      ASSERT_EQ(b.messages[first].role, Role::kUser);
    }
    for (const auto& m : b.messages) ASSERT_TRUE(common::is_valid_utf8(m.content));
    ASSERT_TRUE(paired(b.messages, t.units));
    const bool compacted = b.state.compaction != CompactionReason::kNone;
    t.compactions += compacted;
    t.summarized += b.summarized.has_value();
    if (!previous.empty() && !compacted && !changed && !last_changed && !b.figures.user_truncated &&
        !last.figures.user_truncated && b.summary.id == last.summary.id) {
      // Everything but the previous user message is a prefix of this prompt, whatever the
      // levels did (#28: crossing soft used to cut the oversized messages already sent; the
      // last resort is a compaction, counted as one).
      ASSERT_GT(b.messages.size(), previous.size() - 1);
      for (size_t i = 0; i + 1 < previous.size(); ++i)
        ASSERT_EQ(b.messages[i].content, previous[i].content) << "message " << i;
      ++t.grown;
    }
    previous = b.messages;
    last = b;
    last_changed = changed;
    ++t.turns;
    provider.history.push_back({Role::kUser, user, ++id});
    if (rng() % 4 == 0) tool_steps(rng, provider.history, id);
    if (rng() % 10 != 0) provider.history.push_back({Role::kAssistant, words(rng, 20, 200), ++id});
  }
}

TEST(MultiTurnProperty, FitsEveryTurnAndOnlyGrowsAtTheEndBetweenCompactions) {
  const uint32_t seed = run_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (AUTONOUS_PROPERTY_SEED=" + std::to_string(seed) +
               " repeats this run)");
  std::mt19937 rng(seed);
  Tally t;
  for (int chat = 0; chat < testing::property_cases(60); ++chat) {
    SCOPED_TRACE("chat " + std::to_string(chat));
    one_chat(rng, t);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::cout << "seed " << seed << ": " << t.turns << " turns, " << t.compactions << " compactions, "
            << t.grown << " grew at the end, " << t.summarized << " summarized, " << t.recalled
            << " recalled, " << t.units << " tool units carried, " << t.cleared
            << " with old results cleared\n";
  EXPECT_GT(t.compactions, 0);
  EXPECT_GT(t.units, 0);
  EXPECT_GT(t.cleared, 0);
  if (!testing::full_property_run()) return;  // the rates below are a full run's coverage
  // Many turns only append (small random budgets compact often).
  EXPECT_GT(t.grown, t.turns / 4);
  // Evidence rides in many prompts, and they still fit.
  EXPECT_GT(t.recalled, t.turns / 10);
  EXPECT_GT(t.custom, t.turns / 20);  // custom blocks ride in some prompts, which still fit
}

}  // namespace
}  // namespace autonous::engine
