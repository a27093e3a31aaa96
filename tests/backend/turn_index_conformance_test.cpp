// A turn's history rows as recall's index sees them, through the seam on both backends: the
// worker's completion (Session::write_if, the queue's complete_within, the engine storage's
// index_in_transaction, as the slot runs them) leaves the same terms and counts as the same
// texts written by a front end and caught up, and nothing when it does not commit. On
// PostgreSQL the completion's statement indexes its own rows (migrations/postgres/0024).
#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "internal/engine/engine_storage.h"
#include "internal/queue/task_queue.h"
#include "internal/recall/recall.h"
#include "internal/recall/search_plan.h"
#include "internal/recall/search_terms.h"
#include "tests/backend/search_fixture.h"

namespace autonous::recall {
namespace {

template <typename B>
class TurnIndexTest : public SearchTest<B> {
 protected:
  // The ids of `chat`'s rows that `question` finds, ascending, once its queue is indexed.
  std::vector<int64_t> ids(const std::string& chat, const std::string& question) {
    do this->searcher().catch_up(chat);
    while (this->b_->scalar("SELECT count(*) FROM search_queue WHERE chat_id = " +
                            testing::sql_text(chat)) > 0);
    std::vector<int64_t> out;
    for (const auto& c :
         this->searcher().search_history(chat, search_terms(question), 0, 1'000'000, 10).candidates)
      out.push_back(c.message.history_id);
    std::sort(out.begin(), out.end());
    return out;
  }
};

TYPED_TEST_SUITE(TurnIndexTest, testing::Backends, testing::BackendNames);

// A turn's rows, written by the worker's completion (on PostgreSQL indexed by the completion's
// own statement, not queued: migrations/postgres/0024), end up indexed and counted exactly as
// the same texts written by a front end and caught up; a completion rolled back or fenced off
// leaves nothing; a turn with tool steps, whose rows are queued, is indexed in its transaction.
TYPED_TEST(TurnIndexTest, ATurnsRowsAreIndexedAndCountedAsAFrontEndsAndOnlyWhenCommitted) {
  auto& b = *this->b_;
  engine::EngineStorage& storage = *this->storage_;
  const std::string user = "Where is the parcel to Lyon? 包裹在哪里", reply = "On its way to Lyon.";
  const auto turn = [&](const std::string& chat, bool keep, bool lose_lease,
                        std::vector<common::Message> steps = {}) {
    b.q().enqueue(chat, user);
    std::optional<queue::Task> t =
        b.q().claim("w", std::chrono::system_clock::now(), std::chrono::seconds(60));
    if (!t) throw std::runtime_error("nothing claimed");
    if (lose_lease) t->lease_token = "taken";
    return b.s->write_if([&] {  // as the worker's slot: the completion, then the engine's write
      if (!b.q().complete_within(*t, user, steps, reply, {}, {})) return false;
      storage.index_in_transaction(chat);
      return keep;
    });
  };
  ASSERT_TRUE(turn("worker", true, false));
  this->add("front", user);
  this->add("front", reply, "assistant");
  EXPECT_EQ(b.scalar("SELECT count(*) FROM search_queue WHERE chat_id = 'worker'"), 0);
  this->searcher().catch_up("front");
  const auto terms = [&](const std::string& chat) {
    return b.text("SELECT " + std::string(TypeParam::kPostgres ? "string_agg" : "group_concat") +
                  "(terms, '|') FROM (SELECT t.terms FROM history_terms t JOIN history h ON h.id "
                  "= t.rowid WHERE h.chat_id = '" +
                  chat + "' AND t.chat = '" + chat_token(chat) + "' ORDER BY h.id) AS x");
  };
  EXPECT_EQ(terms("worker"), search_terms_text(user) + "|" + search_terms_text(reply));
  EXPECT_EQ(terms("worker"), terms("front"));
  const auto counts = [&](const std::string& chat) {
    return b.text("SELECT " + std::string(TypeParam::kPostgres ? "string_agg" : "group_concat") +
                  "(term || '=' || rows, ' ') FROM (SELECT term, rows FROM search_term_rows "
                  "WHERE source = 'history' AND chat = '" +
                  chat_token(chat) + "' ORDER BY term) AS x");
  };
  EXPECT_FALSE(counts("worker").empty());
  EXPECT_EQ(counts("worker"), counts("front"));
  const auto has = [](const std::string& text, const std::string& term) {
    const std::vector<std::string> in = search_terms(text);
    return std::count(in.begin(), in.end(), term) > 0 ? 1 : 0;
  };
  for (const std::string& term : search_terms(user + " " + reply))  // in both chats' rows
    EXPECT_EQ(this->overall(term), 2 * (has(user, term) + has(reply, term))) << term;
  EXPECT_EQ(this->overall(""), 4);
  // Nothing of a completion rolled back, or of one whose lease was lost.
  EXPECT_FALSE(turn("rolled-back", false, false));
  EXPECT_FALSE(turn("fenced", true, true));
  EXPECT_EQ(b.scalar("SELECT count(*) FROM history_terms"), 4);
  EXPECT_EQ(this->overall(""), 4);
  for (const std::string chat : {"rolled-back", "fenced"}) {
    EXPECT_EQ(
        b.scalar("SELECT count(*) FROM search_term_rows WHERE chat = '" + chat_token(chat) + "'"),
        0);
    EXPECT_EQ(b.scalar("SELECT count(*) FROM search_queue WHERE chat_id = '" + chat + "'"), 0);
  }
  // A front end's row in the worker's chat is still queued, and the chat's next turn indexes it
  // in its transaction; a turn with tool steps queues its rows and indexes them (and such a
  // row) in its transaction.
  this->add("worker", "a note about Lyon");
  EXPECT_EQ(b.scalar("SELECT count(*) FROM search_queue WHERE chat_id = 'worker'"), 1);
  ASSERT_TRUE(turn("worker", true, false));
  EXPECT_EQ(b.scalar("SELECT count(*) FROM search_queue"), 0);
  EXPECT_EQ(b.scalar("SELECT count(*) FROM history_terms"), 4 + 1 + 2);
  this->add("worker", "another note");
  std::vector<common::Message> steps;
  steps.emplace_back(common::Role::kAssistant, "");
  steps.back().tool_calls =
      R"([{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}])";
  steps.emplace_back(common::Role::kTool, "42 parcels");
  steps.back().tool_call_id = "c1";
  ASSERT_TRUE(turn("worker", true, false, steps));
  EXPECT_EQ(b.scalar("SELECT count(*) FROM search_queue"), 0);
  EXPECT_EQ(b.scalar("SELECT count(*) FROM history_terms"), 4 + 1 + 2 + 1 + 4);
  EXPECT_EQ(this->overall(""), 12);
  const std::vector<int64_t> found = this->ids("worker", "parcels");
  const std::string questions =
      " FROM history WHERE chat_id = 'worker' AND text = " + testing::sql_text(user);
  ASSERT_EQ(b.scalar("SELECT count(*)" + questions), 3);
  std::vector<int64_t> expected;  // the three turns' questions and the tool's answer
  for (int n = 0; n < 3; ++n)
    expected.push_back(
        b.scalar("SELECT id" + questions + " ORDER BY id LIMIT 1 OFFSET " + std::to_string(n)));
  expected.push_back(b.scalar("SELECT id FROM history WHERE text = '42 parcels'"));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(found, expected);
}

}  // namespace
}  // namespace autonous::recall
