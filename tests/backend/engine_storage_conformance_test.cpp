// The engine's storage (engine/engine_storage.h) and the chat administration (backend::ChatAdmin)
// through the seam, the same assertions on both backends: history, a chat's stored state
// (settings and clear point, pins, custom blocks, prompt blocks, context state), summaries,
// calibration and learned limits, and the operator's writes of `autonous chat` and
// `autonous context limits`.
#include <gtest/gtest.h>

#include "internal/engine/chat_settings_store.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/engine_storage.h"
#include "tests/backend/backend_fixture.h"

namespace autonous::engine {
namespace {

using backend::ChatAdmin;

template <typename B>
class EngineStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (B::kPostgres) PG_TEST_OR_SKIP();
    b_ = std::make_unique<B>();
    storage_ = b_->s->engine_storage();
  }
  EngineStorage& s() { return *storage_; }
  // One of the chat administration's writers, in its own transaction, as `autonous chat` runs it.
  template <typename F>
  auto admin(F f) {
    decltype(f(b_->s->chats())) out{};
    b_->s->write([&] { out = f(b_->s->chats()); });
    return out;
  }
  std::unique_ptr<B> b_;
  std::unique_ptr<EngineStorage> storage_;
};

TYPED_TEST_SUITE(EngineStorageTest, testing::Backends, testing::BackendNames);

TYPED_TEST(EngineStorageTest, HistoryIsTheNewestAboveAnIdOldestFirst) {
  for (int i = 1; i <= 6; ++i)
    this->b_->add_history(i == 3 ? "other" : "c", i % 2 ? "user" : "assistant",
                          "m" + std::to_string(i));
  const auto h = this->s().provider().get_history("c", 3, 1);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].content, "m4");
  EXPECT_EQ(h[0].history_id, 4);
  EXPECT_EQ(h[0].role, common::Role::kAssistant);
  EXPECT_EQ(h[2].content, "m6");
  EXPECT_FALSE(h[2].at.empty());
  EXPECT_EQ(this->s().provider().get_history("c", 10, 0).size(), 5u);
  EXPECT_TRUE(this->s().provider().get_history("c", 0, 0).empty());
  EXPECT_TRUE(this->s().provider().get_history("nobody", 10, 0).empty());
}

TYPED_TEST(EngineStorageTest, ATurnsToolStepsAreStoredInOrderAndReadBackWithTheirColumns) {
  auto& b = *this->b_;
  b.q().enqueue("c", "where is order 42?");
  const auto task = b.q().claim("w", std::chrono::system_clock::now(), std::chrono::seconds(60));
  ASSERT_TRUE(task);
  const std::string calls =
      R"([{"id":"call_1","type":"function","function":{"name":"order","arguments":"{\"id\":42}"}},)"
      R"({"id":"call_2","type":"function","function":{"name":"stock","arguments":"{}"}}])";
  common::Message call{common::Role::kAssistant, ""};
  call.tool_calls = calls;
  common::Message r1{common::Role::kTool, R"({"status":"shipped"})"};
  r1.tool_call_id = "call_1";
  common::Message r2{common::Role::kTool, "3 in stock"};
  r2.tool_call_id = "call_2";
  bool done = false;
  b.s->write([&] {
    done = b.q().complete_within(*task, "where is order 42?", {call, r1, r2}, "It has shipped.", {},
                                 {});
  });
  ASSERT_TRUE(done);
  const auto h = this->s().provider().get_history("c", 10, 0);
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(h[0].role, common::Role::kUser);
  EXPECT_TRUE(h[0].tool_calls.empty());
  EXPECT_EQ(h[1].role, common::Role::kAssistant);
  EXPECT_EQ(h[1].tool_calls, calls);  // byte for byte, as the model wrote them
  EXPECT_EQ(h[1].content, "");
  EXPECT_EQ(h[2].tool_call_id, "call_1");
  EXPECT_EQ(h[2].content, R"({"status":"shipped"})");
  EXPECT_EQ(h[3].tool_call_id, "call_2");
  EXPECT_EQ(h[4].content, "It has shipped.");
  EXPECT_TRUE(h[4].tool_calls.empty());
  EXPECT_TRUE(h[4].tool_call_id.empty());
  EXPECT_EQ(b.scalar("SELECT count(*) FROM history WHERE task_id = " + std::to_string(task->id)),
            5);
  // The schema refuses calls on a row that is not the assistant's, calls that are not a JSON
  // array, an id on a row that is not a tool's, and a call's result stored twice for a task.
  const std::string t = std::to_string(task->id);
  EXPECT_ANY_THROW(
      b.exec("INSERT INTO history(chat_id, role, text, tool_calls) VALUES "
             "('c', 'user', 'x', '[]')"));
  EXPECT_ANY_THROW(
      b.exec("INSERT INTO history(chat_id, role, text, tool_calls) VALUES "
             "('c', 'assistant', 'x', '{\"id\":1}')"));
  EXPECT_ANY_THROW(
      b.exec("INSERT INTO history(chat_id, role, text, tool_call_id) VALUES "
             "('c', 'assistant', 'x', 'call_1')"));
  EXPECT_ANY_THROW(
      b.exec("INSERT INTO history(chat_id, role, text, task_id, tool_call_id) "
             "VALUES ('c', 'tool', 'again', " +
             t + ", 'call_1')"));
  EXPECT_ANY_THROW(
      b.exec("INSERT INTO history(chat_id, role, text, task_id) VALUES "
             "('c', 'assistant', 'a second reply', " +
             t + ")"));
  // A front end's tool row without an id is still taken (read as before tools).
  b.exec("INSERT INTO history(chat_id, role, text) VALUES ('c', 'tool', 'legacy')");
  EXPECT_EQ(this->s().provider().get_history("c", 10, 0).size(), 6u);
}

// Migration 0018: a completion stores its rows' token counts under the counter's name; a read
// by that counter gets them back, a read by another counter gets none (-1); the engine's counts
// of rows a front end wrote are stored in the caller's transaction; editing a row's text clears
// its count; a completion without a counter stores none.
TYPED_TEST(EngineStorageTest, TokenCountsAreStoredPerCounterAndClearedWhenTheTextChanges) {
  auto& b = *this->b_;
  b.add_history("c", "user", "a front end's row");  // id 1: no count
  b.q().enqueue("c", "where is order 42?");
  const auto task = b.q().claim("w", std::chrono::system_clock::now(), std::chrono::seconds(60));
  ASSERT_TRUE(task);
  common::Message r1{common::Role::kTool, "shipped"};
  r1.tool_call_id = "call_1";
  common::Message call{common::Role::kAssistant, ""};
  call.tool_calls =
      R"([{"id":"call_1","type":"function","function":{"name":"o","arguments":"{}"}}])";
  const queue::TurnTokens tokens{"o200k_base", 7, {3, 2}, 5};
  bool done = false;
  b.s->write([&] {
    done = b.q().complete_within(*task, "where is order 42?", {call, r1}, "It has shipped.", {},
                                 tokens);
  });
  ASSERT_TRUE(done);
  std::vector<int64_t> counts;
  auto h = this->s().provider().read_history("c", 10, 0, "o200k_base", counts);
  ASSERT_EQ(h.size(), 5u);
  EXPECT_EQ(counts, (std::vector<int64_t>{-1, 7, 3, 2, 5}));
  h = this->s().provider().read_history("c", 10, 0, "llama3", counts);
  EXPECT_EQ(counts, (std::vector<int64_t>{-1, -1, -1, -1, -1}));
  h = this->s().provider().read_history("c", 2, 2, "o200k_base", counts);  // newest two
  EXPECT_EQ(counts, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(h[1].content, "It has shipped.");
  // The engine's counts of rows without one, written in a transaction; another counter's
  // replaces a count.
  // A row whose text is no longer the one counted (edited, or its id reused since the read) is
  // left without a count.
  b.s->write([&] {
    this->s().write_token_counts(
        "o200k_base",
        {{1, 4, "a front end's row"}, {2, 9, "where is order 42?"}, {5, 1, "another text"}});
  });
  this->s().provider().read_history("c", 10, 0, "o200k_base", counts);
  EXPECT_EQ(counts, (std::vector<int64_t>{4, 9, 3, 2, 5}));
  b.s->write([&] { this->s().write_token_counts("llama3", {{5, 6, "It has shipped."}}); });
  this->s().provider().read_history("c", 10, 0, "llama3", counts);
  EXPECT_EQ(counts, (std::vector<int64_t>{-1, -1, -1, -1, 6}));
  // An edit of a row's text clears its count; an edit of another column keeps it.
  b.exec("UPDATE history SET text = 'edited' WHERE id = 2");
  b.exec("UPDATE history SET created_at = created_at WHERE id = 1");
  b.exec("UPDATE history SET text = text WHERE id = 3");
  this->s().provider().read_history("c", 10, 0, "o200k_base", counts);
  EXPECT_EQ(counts, (std::vector<int64_t>{4, -1, 3, 2, -1}));
  EXPECT_EQ(b.scalar("SELECT count(*) FROM history WHERE token_counter IS NULL AND "
                     "token_count IS NULL"),
            1);
  // The schema refuses a negative count; a completion without a counter stores none.
  EXPECT_ANY_THROW(b.exec("UPDATE history SET token_count = -1 WHERE id = 1"));
  b.q().enqueue("c", "and order 43?");
  const auto next = b.q().claim("w", std::chrono::system_clock::now(), std::chrono::seconds(60));
  ASSERT_TRUE(next);
  b.s->write([&] {
    done = b.q().complete_within(*next, "and order 43?", {}, "Not yet.", {},
                                 queue::TurnTokens{"", 1, {}, 1});
  });
  ASSERT_TRUE(done);
  EXPECT_EQ(b.scalar("SELECT count(*) FROM history WHERE token_count IS NULL"), 3);
  // A turn without steps stores its two rows' counts too.
  b.q().enqueue("c", "and 44?");
  const auto last = b.q().claim("w", std::chrono::system_clock::now(), std::chrono::seconds(60));
  ASSERT_TRUE(last);
  b.s->write([&] {
    done = b.q().complete_within(*last, "and 44?", {}, "Tomorrow.", {},
                                 queue::TurnTokens{"o200k_base", 4, {}, 3});
  });
  ASSERT_TRUE(done);
  h = this->s().provider().read_history("c", 2, 0, "o200k_base", counts);
  EXPECT_EQ(counts, (std::vector<int64_t>{4, 3}));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].content, "and 44?");
  EXPECT_EQ(h[1].content, "Tomorrow.");
}

TYPED_TEST(EngineStorageTest, AChatsStoredStateReadsBackWhole) {
  auto& b = *this->b_;
  const ChatState none = this->s().provider().chat_state("c");
  EXPECT_EQ(none.settings_json, "{}");
  EXPECT_EQ(none.cleared_through, 0);
  EXPECT_TRUE(none.pins.empty() && none.blocks.empty() && none.custom.empty());
  b.s->write([&] { b.s->chats().save_overrides("c", R"({"max_tokens":4000})"); });
  b.add_history("c", "user", "hi");
  for (int i = 0; i < 60; ++i)
    b.s->write([&] { b.s->chats().add_pin("c", "pin " + std::to_string(i)); });
  b.exec(
      "INSERT INTO custom_blocks(chat_id, name, text) VALUES (NULL, 'all', 'for every chat'), "
      "('c', 'mine', 'for c'), ('d', 'theirs', 'for d')");
  ContextState state;
  state.chain_start = 1;
  state.verbatim_after = 7;
  state.compactions = 3;
  state.last_reason = CompactionReason::kThreshold;
  state.summary_failures = 1;
  state.summary_skips = 2;
  state.summary_from = 5;
  state.cut_through = 9;  // migration 0013
  this->s().provider().save_context_state("c", state);
  const std::vector<BlockRecord> blocks = {{"system", "abc", 10, 0}, {"history", "def", 200, 42}};
  this->s().write_blocks("c", blocks);
  const ChatState got = this->s().provider().chat_state("c");
  EXPECT_NE(got.settings_json.find("4000"), std::string::npos) << got.settings_json;
  EXPECT_EQ(got.context, state);
  ASSERT_EQ(got.pins.size(), kMaxPins);  // the newest, oldest first
  EXPECT_EQ(got.pins.back(), "pin 59");
  EXPECT_EQ(got.pins.front(), "pin " + std::to_string(60 - kMaxPins));
  EXPECT_EQ(b.s->chats().pins("c").size(), 60u);
  EXPECT_EQ(got.blocks.size(), 2u);
  EXPECT_EQ(got.blocks[0], blocks[1]);  // by name
  ASSERT_EQ(got.custom.size(), 2u);     // the chat's own first
  EXPECT_EQ(got.custom[0].name, "mine");
  EXPECT_EQ(got.custom[1].name, "all");
  // `chat clear`: after the newest message, the context state starts over; reset keeps it.
  int64_t through = 0;
  b.s->write([&] { through = b.s->chats().clear_context("c"); });
  EXPECT_EQ(through, 1);
  EXPECT_EQ(this->s().provider().chat_state("c").cleared_through, 1);
  EXPECT_EQ(this->s().provider().chat_state("c").context, ContextState{});
  EXPECT_TRUE(this->admin([](ChatAdmin& a) { return a.reset_overrides("c"); }));
  EXPECT_FALSE(this->admin([](ChatAdmin& a) { return a.reset_overrides("c"); }));
  EXPECT_EQ(this->s().provider().chat_state("c").settings_json, "{}");
  EXPECT_EQ(this->s().provider().chat_state("c").cleared_through, 1);
  const int64_t first = b.s->chats().pins("c").front().id;
  EXPECT_TRUE(this->admin([&](ChatAdmin& a) { return a.remove_pin("c", first); }));
  EXPECT_FALSE(this->admin([&](ChatAdmin& a) { return a.remove_pin("c", first); }));
  const int64_t next = b.s->chats().pins("c").front().id;
  EXPECT_FALSE(
      this->admin([&](ChatAdmin& a) { return a.remove_pin("d", next); }));  // another chat's
}

TYPED_TEST(EngineStorageTest, SummariesChainPerClearPointNewestFirst) {
  auto& sum = this->s().summaries();
  for (int i = 0; i < 5; ++i) this->b_->add_history("c", "user", "x");
  EXPECT_FALSE(sum.latest("c", 0));
  Summary s{0, 2, 0, "first", 12, "m"};
  const int64_t a = sum.save("c", s, {common::Usage{10, 5, 15, 0}, std::nullopt}, 2);
  s.covers_through = 4;
  s.text = "second";
  const int64_t b = sum.save("c", s, {}, 2);
  EXPECT_GT(b, a);
  s.chain_start = 3;
  s.text = "after a clear";
  sum.save("c", s, {}, 1);
  const auto latest = sum.latest("c", 0);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->id, b);
  EXPECT_EQ(latest->text, "second");
  EXPECT_EQ(latest->covers_through, 4);
  EXPECT_EQ(latest->tokens, 12);
  EXPECT_EQ(latest->model, "m");
  EXPECT_EQ(sum.latest("c", 3)->text, "after a clear");
  EXPECT_EQ(sum.count_between("c", 1, 5), 3);
  EXPECT_EQ(sum.count_between("other", 0, 100), 0);
}

TYPED_TEST(EngineStorageTest, CalibrationMovesBothWaysAndLearnedLimitsFollowTheirRules) {
  auto& s = this->s();
  const auto scale = [&s](const std::string& e, const std::string& m) {
    return s.calibration(e, m).scale;
  };
  EXPECT_DOUBLE_EQ(scale("e", "m"), 1.0);
  EXPECT_EQ(s.calibration("e", "m").added, 0);
  EXPECT_DOUBLE_EQ(s.calibrate("e", "m", {{1.05, 0}, 105, 100, 0}).scale, 1.0);  // on its aim
  const double raised = s.calibrate("e", "m", {{1.0, 0}, 100, 125, 0}).scale;
  EXPECT_GE(raised, 1.25);  // covers what the API counted, with the margin
  EXPECT_DOUBLE_EQ(scale("e", "m"), raised);
  const double lowered = s.calibrate("e", "m", {{raised, 0}, 125, 50, 0}).scale;
  EXPECT_LT(lowered, raised);  // an over-count is lowered toward the server's count
  EXPECT_GT(lowered, 0.42);    // part of the way
  EXPECT_DOUBLE_EQ(scale("e", "m"), lowered);
  EXPECT_DOUBLE_EQ(scale("other", "m"), 1.0);  // per endpoint
  EXPECT_DOUBLE_EQ(scale("e", "other"), 1.0);  // per model
  // The added part is stored with the scale, and alone when the scale stays on its aim.
  const engine::Calibration with = s.calibrate("e", "m", {{lowered, 0}, 125, 50, 1000});
  EXPECT_EQ(with.added, 1000);
  EXPECT_EQ(s.calibration("e", "m").added, 1000);
  const double kept = s.calibration("e", "m").scale;
  EXPECT_EQ(s.calibrate("e", "m", {{kept, 1000}, 100, 100, 1200}).added, 1200);
  EXPECT_EQ(s.calibration("e", "m").added, 1200);
  EXPECT_EQ(s.calibration("other", "m").added, 0);
  // The largest prompt taken whole is written alone when nothing else moves, and only grows
  // (a process that saw less, from a stale read, does not lower it).
  const Calibration now = s.calibration("e", "m");
  EXPECT_EQ(now.proven, 0);
  EXPECT_EQ(s.calibrate("e", "m", {now, 0, 0, now.added, 5000}).proven, 5000);
  EXPECT_EQ(s.calibration("e", "m").proven, 5000);
  EXPECT_DOUBLE_EQ(s.calibration("e", "m").scale, now.scale);
  EXPECT_EQ(s.calibration("e", "m").added, now.added);
  s.calibrate("e", "m", {now, 0, 0, now.added, 3000});
  EXPECT_EQ(s.calibration("e", "m").proven, 5000);
  // A slot's lesson writes only what it moved: another slot's raise of the scale, or its
  // added part, stays (a stale read of them is not written back).
  const Calibration before = s.calibration("e", "m");
  const double up = s.calibrate("e", "m", {before, 100, 200, before.added, 0}).scale;
  EXPECT_GT(up, before.scale);
  s.calibrate("e", "m", {before, 0, 0, before.added, 9000});  // proven only, from `before`
  EXPECT_DOUBLE_EQ(s.calibration("e", "m").scale, up);
  EXPECT_EQ(s.calibration("e", "m").proven, 9000);
  // A lowering computed from a stale read does not undo another slot's raise either (what is
  // stored comes back).
  EXPECT_DOUBLE_EQ(s.calibrate("e", "m", {before, 100, 40, before.added, 0}).scale, up);
  EXPECT_DOUBLE_EQ(s.calibration("e", "m").scale, up);
  s.calibrate("e", "m", {s.calibration("e", "m"), 0, 0, 400, 0});  // the part only
  s.calibrate("e", "m", {before, 0, 0, before.added, 9500});       // stale part: not written
  EXPECT_EQ(s.calibration("e", "m").added, 400);
  EXPECT_DOUBLE_EQ(s.calibration("e", "m").scale, up);
  EXPECT_EQ(s.calibration("other", "m").proven, 0);
  // A scale an older binary stored from a poisoned reply applies as none, and the next reply
  // replaces it.
  this->b_->exec(
      "INSERT INTO token_calibration(endpoint, model, scale, raised) VALUES ('e', 'poisoned', "
      "2.9e17, 1)");
  EXPECT_DOUBLE_EQ(scale("e", "poisoned"), 1.0);
  const double repaired = s.calibrate("e", "poisoned", {{1.0, 0}, 100, 125, 0}).scale;
  EXPECT_GE(repaired, 1.25);
  EXPECT_LE(repaired, 8.0);
  // A row from before migration 0012 (no endpoint) applies to every endpoint without its own.
  this->b_->exec("INSERT INTO token_calibration(model, scale) VALUES ('old', 1.5)");
  EXPECT_DOUBLE_EQ(scale("e", "old"), 1.5);
  EXPECT_FALSE(s.learned_limit("http://e", "m"));
  LearnedLimit guessed{5000, std::nullopt, "too long", ""};
  EXPECT_EQ(s.learn_limit("http://e", "m", guessed), 5000);
  guessed.budget_tokens = 7000;
  EXPECT_EQ(s.learn_limit("http://e", "m", guessed), 5000);  // a guess never raises one
  LearnedLimit stated{9000, 8192, "max 8192", ""};
  EXPECT_EQ(s.learn_limit("http://e", "m", stated), 9000);  // what the server said wins
  const auto got = s.learned_limit("http://e", "m");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->stated_limit, 8192);
  EXPECT_EQ(got->message, "max 8192");
  EXPECT_FALSE(got->learned_at.empty());
  s.learn_limit("http://a", "m", guessed);
  const auto rows = this->b_->s->chats().learned_limits();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].endpoint, "http://a");  // ordered
  const Calibration window_kept = s.calibration("e", "m");
  ASSERT_GT(window_kept.proven, 0);
  EXPECT_EQ(this->admin([](ChatAdmin& a) { return a.forget_limits(); }), 2);
  EXPECT_TRUE(this->b_->s->chats().learned_limits().empty());
  // The largest prompt taken whole goes with them; the scale and the added part stay.
  EXPECT_EQ(s.calibration("e", "m").proven, 0);
  EXPECT_DOUBLE_EQ(s.calibration("e", "m").scale, window_kept.scale);
  EXPECT_EQ(s.calibration("e", "m").added, window_kept.added);
  // A turn that read the old size before the clear and moves only its scale after it does not
  // write that size back.
  s.calibrate("e", "m", {window_kept, 100, 300, window_kept.added, window_kept.proven});
  EXPECT_EQ(s.calibration("e", "m").proven, 0);
}

}  // namespace
}  // namespace autonous::engine
