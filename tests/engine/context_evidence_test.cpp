// Recall's part of a turn, on its own (context_evidence.h): the reserve, the probe ahead of the
// cut, the evidence joined into the prompt.
#include "internal/engine/context_evidence.h"

#include <limits>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "internal/engine/assembler.h"
#include "tests/engine/context_steps_fixture.h"
#include "tests/recall/memory_searcher.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

class ContextEvidenceTest : public ::testing::Test {
 protected:
  ContextEvidenceTest() {
    for (int64_t id = 1; id <= 60; ++id)
      history_.emplace_back(id % 2 == 1 ? Role::kUser : Role::kAssistant,
                            id == 7 ? "the locker code is 4711, keep it safe"
                                    : "small talk number " + std::to_string(id),
                            id, "2026-11-01T10:00:00Z");
    v_.rows = prepare(history_, 0, 250, counter_);
    ends_ = steps::ends_of(100);
    ends_.system = Message(Role::kSystem, "sys");
    ends_.user = Message(Role::kUser, "what was the locker code?");
    ends_.query = ends_.user.content;
  }
  EvidenceSeams seams(recall::Searcher* s) const { return {s, nullptr, settings_, counter_}; }
  std::vector<Message> history_;
  Verbatim v_;
  Ends ends_;
  ContextSettings settings_;
  tokens::CharsOver4Counter counter_{0, 0};
  recall::MemorySearcher searcher_{history_};
};

TEST_F(ContextEvidenceTest, WithoutRecallThereIsNoReserveNoProbeAndNoEvidence) {
  EXPECT_EQ(plan_reserve(seams(nullptr), v_, ends_, false, false), 0);
  EXPECT_EQ(probe_evidence(seams(nullptr), "c", 0, v_, 30, ends_, 300), 0);
  settings_.recall.enabled = false;
  EXPECT_EQ(plan_reserve(seams(&searcher_), v_, ends_, false, false), 0);
  Prompt p{{ends_.system, ends_.user}, {}, 50, 1000};
  EXPECT_TRUE(
      add_evidence(seams(&searcher_), "c", 0, {}, 61, ends_, false, p).evidence.text.empty());
  EXPECT_EQ(searcher_.catch_ups, 0);
}

TEST_F(ContextEvidenceTest, OnlyALongConversationReservesItsShareForEvidence) {
  const int64_t reserve = plan_reserve(seams(&searcher_), v_, ends_, false, false);
  EXPECT_EQ(reserve, static_cast<int64_t>(0.45 * 900));
  Verbatim shortv;
  shortv.rows = prepare({history_.begin(), history_.begin() + 6}, 0, 250, counter_);
  EXPECT_EQ(plan_reserve(seams(&searcher_), shortv, ends_, false, false), 0);
}

TEST_F(ContextEvidenceTest, TheProbeSaysWhatRecallWouldFindBelowAPlannedCut) {
  // The fact (message 7) leaves at a cut at 30: recall would bring it, within the reserve.
  const int64_t found = probe_evidence(seams(&searcher_), "c", 0, v_, 30, ends_, 300);
  EXPECT_GT(found, 0);
  EXPECT_LT(found, 300);
  // A cut that keeps it: nothing below to find.
  EXPECT_EQ(probe_evidence(seams(&searcher_), "c", 0, v_, 4, ends_, 300), 0);
  // A failing index: unknown, the plan keeps its room.
  searcher_.fail_index = true;
  EXPECT_EQ(probe_evidence(seams(&searcher_), "c", 0, v_, 30, ends_, 300), 300);
}

TEST_F(ContextEvidenceTest, RecallSearchesBelowTheKeptRowsUnlessThePromptKeepsTheWholeChat) {
  Verbatim whole = v_;
  whole.whole = true;
  // Kept from the first row read: nothing below (an empty range past the clear point).
  EXPECT_EQ(search_below(whole, 1, 0), 1);
  EXPECT_EQ(search_below(whole, 1, 40), 41);
  // A row dropped now, a chat not read whole, none kept: below the kept rows, or past all read.
  EXPECT_EQ(search_below(whole, 31, 0), 31);
  EXPECT_EQ(search_below(v_, 1, 0), 1);
  EXPECT_EQ(search_below(v_, 31, 0), 31);
  EXPECT_EQ(search_below(whole, std::nullopt, 0), 61);
  EXPECT_EQ(search_below(v_, std::nullopt, 0), 61);
  Verbatim none;
  EXPECT_EQ(search_below(none, std::nullopt, 5), std::numeric_limits<int64_t>::max());
  none.whole = true;  // read and empty: the chat has nothing since its clear point
  EXPECT_EQ(search_below(none, std::nullopt, 5), 6);
}

TEST_F(ContextEvidenceTest, TheProbeOfAChatKeptWholeSearchesOnlyDocuments) {
  // The chat's rows since its clear point are 31..60 (the ids below are other chats').
  Verbatim whole;
  whole.rows = rows_from(v_.rows, 30);
  whole.whole = true;
  EXPECT_EQ(probe_evidence(seams(&searcher_), "c", 0, whole, 0, ends_, 300), 0);
  EXPECT_EQ(searcher_.history_searches, 0);
  EXPECT_EQ(searcher_.document_searches, 1);
  // Not read whole (older rows may be unread): below 31 is searched, and message 7 found.
  whole.whole = false;
  EXPECT_GT(probe_evidence(seams(&searcher_), "c", 0, whole, 0, ends_, 300), 0);
  EXPECT_EQ(searcher_.history_searches, 1);
}

// An embedder the probe must not call: its question vector would be one call a turn.
class UncalledEmbedder final : public recall::Embedder {
 public:
  std::vector<std::vector<float>> embed(const std::vector<std::string>& /*texts*/) override {
    ADD_FAILURE() << "the probe embedded";
    return {};
  }
  const std::string& model() const override { return model_; }

 private:
  std::string model_ = "e";
};

TEST_F(ContextEvidenceTest, WhenRecallCannotBeAskedAheadTheProbeKeepsTheReserve) {
  UncalledEmbedder embedder;
  const EvidenceSeams with_vectors{&searcher_, &embedder, settings_, counter_};
  EXPECT_EQ(probe_evidence(with_vectors, "c", 0, v_, 30, ends_, 300), 300);
  EXPECT_EQ(probe_evidence(seams(&searcher_), "c", 0, v_, 60, ends_, 300), 300);  // past all
  Ends cut_user = ends_;
  cut_user.user_truncated = true;
  EXPECT_EQ(probe_evidence(seams(&searcher_), "c", 0, v_, 30, cut_user, 300), 300);
  Ends no_query = ends_;
  no_query.query.clear();
  EXPECT_EQ(probe_evidence(seams(&searcher_), "c", 0, v_, 30, no_query, 300), 300);
  EXPECT_EQ(searcher_.catch_ups, 0);
}

TEST_F(ContextEvidenceTest, EvidenceIsJoinedIntoTheUserMessageAndCostsExactlyWhatItAdded) {
  StandardAssembler assembler;
  std::vector<Message> kept(history_.begin() + 40, history_.end());
  Prompt p = assemble_prompt(assembler, ends_, kept, std::nullopt, counter_);
  const int64_t before = p.tokens;
  const EvidenceStep e = add_evidence(seams(&searcher_), "c", 0, p.history, 41, ends_, false, p);
  ASSERT_FALSE(e.evidence.items.empty());
  EXPECT_NE(p.messages.back().content.find("4711"), std::string::npos);
  EXPECT_EQ(e.evidence.tokens, p.tokens - before);
  EXPECT_EQ(p.tokens, counter_.count_prompt(p.messages));
  EXPECT_TRUE(e.warnings.empty());
  // A user message cut to fit carries none.
  Prompt q = assemble_prompt(assembler, ends_, kept, std::nullopt, counter_);
  EXPECT_TRUE(add_evidence(seams(&searcher_), "c", 0, q.history, 41, ends_, true, q)
                  .evidence.items.empty());
}

TEST_F(ContextEvidenceTest, AFailingIndexAddsNothingAndSaysSo) {
  searcher_.fail_index = true;
  StandardAssembler assembler;
  Prompt p = assemble_prompt(assembler, ends_, {}, std::nullopt, counter_);
  const std::vector<Message> before = p.messages;
  const EvidenceStep e = add_evidence(seams(&searcher_), "c", 0, {}, 61, ends_, false, p);
  EXPECT_TRUE(e.evidence.items.empty());
  EXPECT_EQ(p.messages, before);
  ASSERT_EQ(e.warnings.size(), 1u);
  EXPECT_EQ(e.warnings[0].reason, "gatherer_failed");
}

}  // namespace
}  // namespace autonous::engine
