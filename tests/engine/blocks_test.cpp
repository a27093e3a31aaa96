// The engine's blocks end to end in memory: the layouts, pinned facts, the delta builder and
// the evidence's place in the prompt (the store and the binary have their own tests).
#include <gtest/gtest.h>

#include "internal/common/text.h"
#include "internal/engine/assembler.h"
#include "internal/engine/context_builder.h"
#include "internal/engine/level_compressor.h"
#include "internal/engine/summary_compactor.h"
#include "internal/recall/search_terms.h"
#include "internal/tokens/token_counter.h"
#include "tests/engine/vector_provider.h"
#include "tests/recall/memory_searcher.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

class BlocksTest : public ::testing::Test {
 protected:
  BlocksTest() {
    for (int i = 1; i <= 300; ++i)
      provider_.history.emplace_back(i % 2 ? Role::kUser : Role::kAssistant,
                                     i == 5 ? "my passport number is X1234567"
                                            : "we talked about the weather " + std::to_string(i),
                                     i, "2026-01-01T00:00:00.000Z");
  }
  BuiltContext build(Layout layout, const std::string& text = "what is my passport number?") {
    ContextSettings s;
    s.system_prompt = "You are helpful.";
    s.policy.max_tokens = 2000;
    s.layout = layout;
    ContextBuilder b(s, provider_, compressor_, assembler_, counter_, {.searcher = &searcher_});
    return b.build("c", text);
  }
  VectorProvider provider_;
  recall::MemorySearcher searcher_{provider_.history};
  tokens::CharsOver4Counter counter_{3, 3};
  LevelCompressor compressor_{counter_};
  StandardAssembler assembler_;
};

TEST_F(BlocksTest, AChatKeptWholeIsNotSearchedButItsDocumentsAre) {
  // Six messages, all in the prompt (ids 101..106: the ones below are other chats'), while the
  // searcher would find message 5 if asked: recall could find nothing of this chat below them.
  std::vector<Message> chat(provider_.history.begin() + 100, provider_.history.begin() + 106);
  VectorProvider provider;
  provider.history = chat;
  const auto build_whole = [&](const std::string& text) {
    ContextSettings s;
    s.system_prompt = "You are helpful.";
    s.policy.max_tokens = 2000;
    ContextBuilder b(s, provider, compressor_, assembler_, counter_, {.searcher = &searcher_});
    return b.build("c", text);
  };
  recall::Candidate doc;
  doc.document = true;
  doc.message = Message(Role::kUser, "the passport office opens at nine", 1, "");
  doc.title = "office hours";
  searcher_.documents.push_back(doc);
  const BuiltContext whole = build_whole("when does the passport office open?");
  EXPECT_EQ(searcher_.history_searches, 0);
  EXPECT_EQ(searcher_.document_searches, 1);
  EXPECT_NE(whole.messages.back().content.find("opens at nine"), std::string::npos);
  EXPECT_EQ(whole.messages.back().content.find("X1234567"), std::string::npos);
  // Cleared up to message 102 and kept whole since: still nothing to search.
  provider.state.cleared_through = 102;
  build_whole("what is my passport number?");
  EXPECT_EQ(searcher_.history_searches, 0);
  // Its older messages not read (a window of 4): they are searched.
  provider.state.cleared_through = 0;
  ContextSettings s;
  s.system_prompt = "You are helpful.";
  s.policy.max_tokens = 2000;
  s.history_window = 4;
  ContextBuilder b(s, provider, compressor_, assembler_, counter_, {.searcher = &searcher_});
  b.build("c", "what is my passport number?");
  EXPECT_GE(searcher_.history_searches, 1);
  // Its first row read is a tool result whose call is gone (a front end's row before a user
  // message), left out of the prompt: searched.
  provider.history = chat;
  provider.history.insert(provider.history.begin(),
                          Message(Role::kTool, "the result of a call gone", 100, ""));
  provider.history.front().tool_call_id = "call_gone";
  provider.state = ChatState{};
  const int before = searcher_.history_searches;
  build_whole("what is my passport number?");
  EXPECT_GT(searcher_.history_searches, before);
}

TEST_F(BlocksTest, AChatLongerThanThePromptIsSearchedBelowIt) {
  const BuiltContext b = build(Layout::kDefault);
  EXPECT_GE(searcher_.history_searches, 1);  // the probe ahead of the cut, then the prompt's
  ASSERT_FALSE(b.evidence.items.empty());
  EXPECT_NE(b.messages.back().content.find("X1234567"), std::string::npos);
}

TEST_F(BlocksTest, TheDefaultLayoutPutsEvidenceAfterTheUsersTextInTheLastMessage) {
  const BuiltContext b = build(Layout::kDefault);
  ASSERT_FALSE(b.evidence.items.empty());
  const std::string& last = b.messages.back().content;
  EXPECT_EQ(last.find("what is my passport number?"), 0u);
  EXPECT_NE(last.find("<recalled_messages>"), std::string::npos);
  EXPECT_NE(last.find("X1234567"), std::string::npos);
  EXPECT_LE(b.figures.estimated_tokens, 2000);
  EXPECT_EQ(b.figures.estimated_tokens, counter_.count_prompt(b.messages));
  std::vector<std::string> names;
  for (const Block& block : b.blocks) names.push_back(block.name);
  EXPECT_EQ(names, (std::vector<std::string>{"system", "history", "user", "evidence"}));
  EXPECT_EQ(b.blocks[0].tier, 0);
  EXPECT_EQ(b.blocks[3].tier, 2);
  EXPECT_GT(b.evidence_reserve, 0);
}

TEST_F(BlocksTest, OnlyAConversationOfOverTwentyTurnsReservesLongTermMemory) {
  provider_.history.resize(42);  // 21 turns
  EXPECT_GT(build(Layout::kDefault).evidence_reserve, 0);
  provider_.history.resize(40);  // 20
  EXPECT_EQ(build(Layout::kDefault).evidence_reserve, 0);
  // Right after a compaction the prompt holds fewer, but older ones left it: still long-term.
  provider_.state.context.verbatim_after = 10;
  EXPECT_GT(build(Layout::kDefault).evidence_reserve, 0);
}

TEST_F(BlocksTest, ACompactionKeepsRoomOnlyForTheEvidenceRecallFinds) {
  // 90 messages of ~45 tokens at a 2 000 budget: this turn compacts by tokens. A question
  // recall finds nothing for keeps no reserve, and the prompt lands on the target (0.60) with
  // its history alone.
  provider_.history.resize(90);
  for (Message& m : provider_.history)
    if (m.history_id != 5) m.content += " " + std::string(150, 'x');
  const BuiltContext none = build(Layout::kDefault, "tell me a joke about frogs");
  EXPECT_NE(none.state.compaction, CompactionReason::kNone);
  EXPECT_TRUE(none.evidence.items.empty());
  EXPECT_EQ(none.evidence_reserve, 0);
  // Near the target, not 0.6 × (2 000 − the reserve), what it was before evidence first.
  EXPECT_GE(none.figures.estimated_tokens, 1100);
  EXPECT_LE(none.figures.estimated_tokens, 1400);
  // One that recall answers keeps room for what it found, and lands on the target with it
  // (the same turn again: the first one's compaction is set aside).
  ASSERT_NE(provider_.state.context.verbatim_after, 0);
  provider_.state.context = ContextState{};
  const BuiltContext found = build(Layout::kDefault);
  EXPECT_NE(found.state.compaction, CompactionReason::kNone);
  ASSERT_FALSE(found.evidence.items.empty());
  EXPECT_GT(found.evidence_reserve, 0);
  // The room kept is what it found (no more), and what it found is what the prompt carries.
  EXPECT_LE(found.figures.compressed_count, none.figures.compressed_count);
  EXPECT_LE(found.evidence_reserve, found.evidence.tokens + 8)
      << found.evidence_reserve << " " << found.evidence.tokens;
  EXPECT_GE(found.figures.estimated_tokens, 1100);
  EXPECT_LE(found.figures.estimated_tokens, 2000);
}

TEST_F(BlocksTest, CustomBlocksComeLastAtTheLowestTierAndGiveWayFirst) {
  provider_.state.custom = {{7, "Store hours", "Open 9 to 17 on weekdays."}};
  BuiltContext b = build(Layout::kDefault);
  const std::string& last = b.messages.back().content;
  ASSERT_NE(last.find("<custom_context>"), std::string::npos);
  EXPECT_LT(last.find("<recalled_messages>"), last.find("<custom_context>"));
  EXPECT_EQ(b.blocks.back().name, "custom");
  EXPECT_EQ(b.blocks.back().tier, 4);
  EXPECT_EQ(b.blocks.back().ids, std::vector<int64_t>{7});
  EXPECT_EQ(b.figures.estimated_tokens, counter_.count_prompt(b.messages));
  // A block far over the room: halved or left out, said so, and the prompt still fits.
  provider_.state.custom = {{8, "Catalogue", std::string(20000, 'c')}};
  b = build(Layout::kDefault);
  EXPECT_LE(b.figures.estimated_tokens, 2000);
  bool warned = false;
  for (const auto& w : b.warnings) warned = warned || w.reason == "custom_left_out";
  EXPECT_TRUE(warned);
}

TEST_F(BlocksTest, TheSectionedLayoutNamesTheSeedsSections) {
  const BuiltContext b = build(Layout::kSectioned);
  EXPECT_EQ(b.messages.front().content.rfind("[Role & Policies]\n", 0), 0u);
  const std::string& last = b.messages.back().content;
  EXPECT_EQ(last.rfind("[Task]\nwhat is my passport number?", 0), 0u);
  const size_t evidence = last.find("[Evidence]\n<recalled_messages>");
  const size_t output = last.find("[Output]\n");
  ASSERT_NE(evidence, std::string::npos);
  ASSERT_NE(output, std::string::npos);
  EXPECT_LT(evidence, output);
  EXPECT_LE(b.figures.estimated_tokens, 2000);
  EXPECT_EQ(b.figures.estimated_tokens, counter_.count_prompt(b.messages));
}

TEST_F(BlocksTest, TheMinimalLayoutSendsNoHistoryAndRecallsFromAllOfIt) {
  const BuiltContext b = build(Layout::kMinimal, "what did we say about the weather 299?");
  ASSERT_EQ(b.messages.size(), 2u);
  EXPECT_EQ(b.figures.compressed_count, 0);
  bool newest = false;
  for (const recall::RecallItem& i : b.evidence.items)
    newest = newest || i.message.history_id == 299;
  EXPECT_TRUE(newest);
}

TEST_F(BlocksTest, PinnedFactsRideInTheSystemMessageAndAnOversizedOneIsSkipped) {
  provider_.state.pins = {"name: Ada", std::string(9000, 'p'), "prefers tea"};
  const BuiltContext b = build(Layout::kDefault);
  const std::string& system = b.messages.front().content;
  EXPECT_NE(system.find("<pinned_facts>"), std::string::npos);
  EXPECT_NE(system.find("- name: Ada\n- prefers tea\n"), std::string::npos);
  EXPECT_EQ(b.pins_left_out, 1);
  ASSERT_FALSE(b.warnings.empty());
  EXPECT_EQ(b.warnings.back().reason, "pins_left_out");
  EXPECT_EQ(b.blocks[1].name, "pinned");
  EXPECT_EQ(b.blocks[1].count, 2);
  EXPECT_LE(b.figures.estimated_tokens, 2000);
}

TEST_F(BlocksTest, TheDeltaBuilderNamesReusedBlocksAndPredictsTheCachedPrefix) {
  BuiltContext first = build(Layout::kDefault, "hello there");
  EXPECT_TRUE(first.delta.reused.empty());
  EXPECT_EQ(first.delta.predicted_cached_tokens, 0);
  provider_.state.blocks = first.delta.records;  // stored with the answered turn
  provider_.state.context = first.state.after;
  provider_.history.emplace_back(Role::kUser, "hello there", 301);
  provider_.history.emplace_back(Role::kAssistant, "hi!", 302);
  const BuiltContext second = build(Layout::kDefault, "and now?");
  EXPECT_EQ(second.delta.reused, (std::vector<std::string>{"system", "history"}));
  EXPECT_GT(second.delta.predicted_cached_tokens, second.blocks[0].tokens);
  EXPECT_LT(second.delta.predicted_cached_tokens, second.figures.estimated_tokens);
  // A new pin changes the system message: only the system prompt's tokens stay cached.
  provider_.state.blocks = second.delta.records;
  provider_.state.pins = {"name: Ada"};
  const BuiltContext third = build(Layout::kDefault, "and now?");
  EXPECT_EQ(third.delta.changed.front(), "pinned");
  EXPECT_EQ(third.delta.predicted_cached_tokens, third.blocks[0].tokens);
}

TEST(BlockTags, WholeTagNamesAreDefusedWithSpacesAndOtherTextIsLeftAlone) {
  std::string text =
      "< /recalled_messages > <documents> <DocumentSettings> <pinned_factsX> "
      "</conversation_summary>";
  common::defuse_block_tags(text);
  EXPECT_EQ(text.find("< /recalled"), std::string::npos);
  EXPECT_EQ(text.find("<documents>"), std::string::npos);
  EXPECT_EQ(text.find("</conversation_summary>"), std::string::npos);
  EXPECT_NE(text.find("<DocumentSettings>"), std::string::npos);
  EXPECT_NE(text.find("<pinned_factsX>"), std::string::npos);
}

TEST(QueryTerms, FunctionWordsAndGreetingsSearchNothing) {
  EXPECT_TRUE(recall::search_query_terms("How are you?").empty());
  EXPECT_TRUE(recall::search_query_terms("hi").empty());
  EXPECT_TRUE(recall::search_query_terms("Привет, как ты?").empty());
  const auto q = recall::search_query_terms("What is my locker code?");
  EXPECT_EQ(q, (std::vector<std::string>{"locker", "code"}));
  const auto zh = recall::search_query_terms("我的地址是什么？");
  EXPECT_NE(std::find(zh.begin(), zh.end(), "地址"), zh.end());
  EXPECT_EQ(std::find(zh.begin(), zh.end(), "的"), zh.end());
}

}  // namespace
}  // namespace autonous::engine
