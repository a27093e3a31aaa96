#include "internal/store/engine.h"

#include <gtest/gtest.h>

#include "internal/backend/sqlite/search_index.h"
#include "internal/backend/sqlite/sqlite_provider.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/context/assembler.h"
#include "internal/context/context_builder.h"
#include "internal/context/level_compressor.h"
#include "internal/store/chat_settings_store.h"
#include "internal/tokens/token_counter.h"
#include "tests/support/test_db.h"

namespace autonous::store {
namespace {

using config::Config;

class EngineTest : public ::testing::Test {
 protected:
  void add_history(int n, size_t chars) {
    SQLite::Statement ins(t_.db(), "INSERT INTO history(chat_id, role, text) VALUES ('c', ?, ?)");
    for (int i = 0; i < n; ++i) {
      ins.bind(1, i % 2 == 0 ? "user" : "assistant");
      ins.bind(2, std::string(chars, static_cast<char>('a' + i % 26)));
      ins.exec();
      ins.reset();
    }
  }
  std::string variable_refused(const Config& c) {
    try {
      (void)engine_settings(c, counter_);
    } catch (const config::ConfigError& e) {
      return e.variable();
    }
    return "accepted";
  }
  testing::TestDb t_;
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

TEST_F(EngineTest, BuildsWhatAHandWiredBuilderBuilds) {
  add_history(40, 200);
  Config c;
  c.max_context_tokens = 1000;
  const EngineSettings s = engine_settings(c, counter_);
  const Engine engine(make_sqlite_storage(t_.db()), s, counter_);
  SQLiteProvider provider(t_.db());
  const context::LevelCompressor compressor(counter_);
  const context::StandardAssembler assembler;
  context::ContextBuilder builder(s.context, provider, compressor, assembler, counter_);
  SearchIndex search(t_.db());
  builder.enable_recall(search);
  const auto a = engine.build("c", "hello");
  const auto b = builder.build("c", "hello");
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (size_t i = 0; i < a.messages.size(); ++i)
    EXPECT_EQ(a.messages[i].content, b.messages[i].content);
  EXPECT_EQ(a.figures.level, b.figures.level);
  EXPECT_LE(a.figures.estimated_tokens, 1000);
}

TEST_F(EngineTest, TheSimpleCompressorDropsInsteadOfCutting) {
  add_history(10, 4000);  // oversized messages: the levels would cut them
  Config c;
  c.max_context_tokens = 4000;
  const Engine levels(make_sqlite_storage(t_.db()), engine_settings(c, counter_), counter_);
  c.context_compressor = "simple";
  const Engine simple(make_sqlite_storage(t_.db()), engine_settings(c, counter_), counter_);
  const auto cut = levels.build("c", "hi");
  const auto dropped = simple.build("c", "hi");
  EXPECT_GT(cut.figures.cut_messages, 0);
  EXPECT_EQ(dropped.figures.cut_messages, 0);
  EXPECT_LT(dropped.figures.compressed_count, cut.figures.compressed_count);
  EXPECT_LE(dropped.figures.estimated_tokens, 4000);
}

TEST_F(EngineTest, ADryRunEngineReportsAPendingSummaryAndWritesNothing) {
  add_history(60, 400);
  Config c;
  c.context_strategy = "summarize";
  c.max_context_tokens = 4000;
  c.summary_max_tokens = 256;
  const Engine dry(make_sqlite_storage(t_.db()), engine_settings(c, counter_), counter_, nullptr);
  const auto built = dry.build("c", "what did I say?");
  EXPECT_GT(built.summary.pending, 0);
  EXPECT_FALSE(built.summarized);
  EXPECT_EQ(t_.db().execAndGet("SELECT count(*) FROM context_summaries").getInt(), 0);
}

TEST_F(EngineTest, AChatsOwnSettingsApplyWithinTheModelCeiling) {
  add_history(4, 40);
  Config c;
  c.context_window = 4000;
  c.reserve_output_tokens = 1000;
  save_overrides(t_.db(), "c", R"({"max_tokens":100000,"strategy":"sliding_window"})");
  const Engine engine(make_sqlite_storage(t_.db()), engine_settings(c, counter_), counter_);
  const auto built = engine.build("c", "hi");
  EXPECT_TRUE(built.chat.own_settings);
  EXPECT_EQ(built.chat.strategy, context::Strategy::kSlidingWindow);
  EXPECT_EQ(built.figures.budget_tokens, 3000);
}

}  // namespace
}  // namespace autonous::store
