// The engine (engine/engine.h) over each backend's storage, through the seam: it builds what a
// hand-wired builder builds, the simple compressor drops where the levels cut, a dry run writes
// nothing, and a chat's own settings apply within the model's ceiling.
#include <gtest/gtest.h>

#include "internal/config/config.h"
#include "internal/engine/assembler.h"
#include "internal/engine/context_builder.h"
#include "internal/engine/engine.h"
#include "internal/engine/engine_storage.h"
#include "internal/engine/level_compressor.h"
#include "internal/tokens/token_counter.h"
#include "tests/backend/backend_fixture.h"

namespace autonous::engine {
namespace {

using config::Config;

template <typename B>
class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (B::kPostgres) PG_TEST_OR_SKIP();
    b_ = std::make_unique<B>();
  }
  std::unique_ptr<EngineStorage> storage() { return b_->s->engine_storage(); }
  // `n` messages of chat "c" of `chars` characters each, alternating user and assistant.
  void add_history(int n, size_t chars) {
    b_->exec("BEGIN");
    for (int i = 0; i < n; ++i)
      b_->add_history("c", i % 2 == 0 ? "user" : "assistant",
                      std::string(chars, static_cast<char>('a' + i % 26)));
    b_->exec("COMMIT");
  }
  std::unique_ptr<B> b_;
  tokens::CharsOver4Counter counter_{3, 3};
};

TYPED_TEST_SUITE(EngineTest, testing::Backends, testing::BackendNames);

TYPED_TEST(EngineTest, BuildsWhatAHandWiredBuilderBuilds) {
  this->add_history(40, 200);
  Config c;
  c.max_context_tokens = 1000;
  const EngineSettings s = engine_settings(c, this->counter_);
  const Engine engine(this->storage(), s, this->counter_);
  const auto own = this->storage();
  const LevelCompressor compressor(this->counter_);
  const StandardAssembler assembler;
  ContextBuilder builder(s.context, own->provider(), compressor, assembler, this->counter_,
                         {.searcher = &own->searcher()});
  const auto a = engine.build("c", "hello");
  const auto b = builder.build("c", "hello");
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (size_t i = 0; i < a.messages.size(); ++i)
    EXPECT_EQ(a.messages[i].content, b.messages[i].content);
  EXPECT_EQ(a.figures.level, b.figures.level);
  EXPECT_LE(a.figures.estimated_tokens, 1000);
}

TYPED_TEST(EngineTest, TheSimpleCompressorDropsInsteadOfCutting) {
  this->add_history(10, 4000);  // oversized messages: the levels would cut them
  Config c;
  c.max_context_tokens = 4000;
  const Engine levels(this->storage(), engine_settings(c, this->counter_), this->counter_);
  c.context_compressor = "simple";
  const Engine simple(this->storage(), engine_settings(c, this->counter_), this->counter_);
  const auto cut = levels.build("c", "hi");
  const auto dropped = simple.build("c", "hi");
  EXPECT_GT(cut.figures.cut_messages, 0);
  EXPECT_EQ(dropped.figures.cut_messages, 0);
  EXPECT_LT(dropped.figures.compressed_count, cut.figures.compressed_count);
  EXPECT_LE(dropped.figures.estimated_tokens, 4000);
}

TYPED_TEST(EngineTest, ADryRunEngineReportsAPendingSummaryAndWritesNothing) {
  this->add_history(60, 400);
  Config c;
  c.context_strategy = "summarize";
  c.max_context_tokens = 4000;
  c.summary_max_tokens = 256;
  const Engine dry(this->storage(), engine_settings(c, this->counter_), this->counter_, nullptr);
  const auto built = dry.build("c", "what did I say?");
  EXPECT_GT(built.summary.pending, 0);
  EXPECT_FALSE(built.summarized);
  EXPECT_EQ(this->b_->scalar("SELECT count(*) FROM context_summaries"), 0);
}

TYPED_TEST(EngineTest, AChatsOwnSettingsApplyWithinTheModelCeiling) {
  this->add_history(4, 40);
  Config c;
  c.context_window = 4000;
  c.reserve_output_tokens = 1000;
  this->b_->s->write([&] {
    this->b_->s->chats().save_overrides("c",
                                        R"({"max_tokens":100000,"strategy":"sliding_window"})");
  });
  const Engine engine(this->storage(), engine_settings(c, this->counter_), this->counter_);
  const auto built = engine.build("c", "hi");
  EXPECT_TRUE(built.chat.own_settings);
  EXPECT_EQ(built.chat.strategy, Strategy::kSlidingWindow);
  EXPECT_EQ(built.figures.budget_tokens, 3000);
}

}  // namespace
}  // namespace autonous::engine
