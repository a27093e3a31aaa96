// Recall's search index on both backends (SearchIndex on a real SQLite file, PgSearchIndex on
// a fresh PostgreSQL database): rows written by plain SQL (as a front end would) are queued by
// triggers and indexed by catch_up; CJK two-character words, stems, the id range, neighbours,
// documents, deletes, term counts and the deadline, with the same answers on both.
#include "internal/backend/sqlite/search_index.h"

#include <thread>

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <gtest/gtest.h>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/search.h"
#include "internal/backend/postgres/stores.h"
#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/store/chat_settings_store.h"
#include "internal/tokens/search_terms.h"
#include "tests/support/pg_test_db.h"
#include "tests/support/test_db.h"

namespace autonous::store {
namespace {

struct SqliteBackend {
  static constexpr bool kPostgres = false;
  testing::TestDb t;
  SearchIndex index{t.db()};
  int64_t add(const std::string& chat, const std::string& text, const std::string& role) {
    SQLite::Statement q(t.db(), "INSERT INTO history(chat_id, role, text) VALUES (?, ?, ?)");
    q.bind(1, chat);
    q.bind(2, role);
    q.bind(3, text);
    q.exec();
    return t.db().getLastInsertRowid();
  }
  int64_t num(const std::string& sql) { return t.db().execAndGet(sql).getInt64(); }
  void exec(const std::string& sql) { t.db().exec(sql); }
  template <typename F>
  void in_transaction(F&& f) {
    SQLite::Transaction tx(t.db());
    f();
    tx.commit();
  }
  // The overall count of `term` (every chat's rows of the source).
  int64_t overall(const std::string& term) {
    return num(
        "SELECT coalesce((SELECT rows FROM search_term_rows WHERE source = 'history' AND chat = "
        "'' AND term = '" +
        term + "'), 0)");
  }
};

struct PgBackend {
  static constexpr bool kPostgres = true;
  testing::PgTestDb t;
  PgSearchIndex index{t.db()};
  int64_t add(const std::string& chat, const std::string& text, const std::string& role) {
    return t.db()
        .query("INSERT INTO history(chat_id, role, text) VALUES ($1, $2, $3) RETURNING id",
               {db::pg::param(chat), db::pg::param(role), db::pg::param(text)})
        .int64(0, 0);
  }
  int64_t num(const std::string& sql) { return t.scalar(sql); }
  void exec(const std::string& sql) { t.db().exec(sql); }
  template <typename F>
  void in_transaction(F&& f) {
    db::pg::Transaction tx(t.db());
    f();
    tx.commit();
  }
  // Folded and buffered (search_term_deltas) together, as the searches read it.
  int64_t overall(const std::string& term) {
    return num(
        "SELECT coalesce((SELECT rows FROM search_term_rows WHERE source = 'history' AND chat = "
        "'' AND term = '" +
        term +
        "'), 0) + coalesce((SELECT sum(rows) FROM search_term_deltas WHERE source = 'history' "
        "AND term = '" +
        term + "'), 0)");
  }
};

template <typename B>
class SearchIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (B::kPostgres) PG_TEST_OR_SKIP();
    b_ = std::make_unique<B>();
  }
  int64_t add(const std::string& chat, const std::string& text, const std::string& role = "user") {
    return b_->add(chat, text, role);
  }
  int64_t queued() { return b_->num("SELECT count(*) FROM search_queue"); }
  std::vector<int64_t> ids(const std::string& chat, const std::string& question, int64_t after = 0,
                           int64_t before = 1'000'000) {
    b_->index.catch_up(chat);
    std::vector<int64_t> out;
    for (const auto& c :
         b_->index.search_history(chat, tokens::search_terms(question), after, before, 10)
             .candidates)
      out.push_back(c.message.history_id);
    return out;
  }
  std::unique_ptr<B> b_;
};

using Backends = ::testing::Types<SqliteBackend, PgBackend>;
TYPED_TEST_SUITE(SearchIndexTest, Backends, testing::BackendNames);

TYPED_TEST(SearchIndexTest, PlainSqlInsertsAreQueuedAndIndexedOnCatchUp) {
  const int64_t fact = this->add("c", "My locker code is 4471");
  for (int i = 0; i < 30; ++i) this->add("c", "nothing to see here " + std::to_string(i));
  EXPECT_EQ(this->queued(), 31);
  const auto hits = this->ids("c", "what is the locker code?");
  EXPECT_EQ(this->queued(), 0);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front(), fact);
  // Another chat's rows are not this chat's.
  this->add("other", "my locker code is 9999");
  EXPECT_EQ(this->ids("c", "locker code").size(), 1u);
}

TYPED_TEST(SearchIndexTest, CatchUpIndexesTheChatAndDocumentsTheBacklogAnyChat) {
  // 20 rows a chat: well within a catch-up's time budget, even under a sanitizer.
  for (int i = 0; i < 40; ++i) this->add(i % 2 ? "a" : "b", "row " + std::to_string(i));
  this->b_->exec("INSERT INTO documents(title, text) VALUES ('t', 'a document')");
  this->b_->index.catch_up("a");
  EXPECT_EQ(this->b_->num("SELECT count(*) FROM search_queue WHERE chat_id = 'a'"), 0);
  EXPECT_EQ(this->b_->num("SELECT count(*) FROM search_queue WHERE chat_id = 'b'"), 20);
  EXPECT_EQ(this->b_->num("SELECT count(*) FROM search_queue WHERE source = 'document'"), 0);
  EXPECT_EQ(this->b_->index.index_backlog(std::chrono::seconds(5)), 20);
  EXPECT_EQ(this->queued(), 0);
  EXPECT_EQ(this->b_->index.index_backlog(std::chrono::seconds(5)), 0);
}

TYPED_TEST(SearchIndexTest, AnIndexingBudgetStopsWithinABatch) {
  for (int i = 0; i < 600; ++i) this->add("a", "row " + std::to_string(i));
  const int64_t n = this->b_->index.index_backlog(std::chrono::milliseconds(0));
  EXPECT_GE(n, 1);    // always some progress
  EXPECT_LT(n, 250);  // not a whole batch past the budget
  EXPECT_EQ(this->queued(), 600 - n);
}

TYPED_TEST(SearchIndexTest, ChineseAndJapaneseTwoCharacterWordsAndRussianFormsMatch) {
  const int64_t zh = this->add("c", "我的新地址是北京市朝阳区建国路88号");
  const int64_t ja = this->add("c", "私の誕生日は三月十日です");
  const int64_t ru = this->add("c", "Мой адрес: улица Ленина, дом 5");
  for (int i = 0; i < 20; ++i)
    this->add("c", "filler 随便说说 いろいろ всякое " + std::to_string(i));
  EXPECT_EQ(this->ids("c", "我的地址是什么？").front(), zh);
  EXPECT_EQ(this->ids("c", "誕生日はいつ？").front(), ja);
  EXPECT_EQ(this->ids("c", "какой у меня адреса?").front(), ru);
}

TYPED_TEST(SearchIndexTest, OnlyTheGivenIdRangeIsSearchedAndNeighboursStayInIt) {
  std::vector<int64_t> row;
  for (int i = 0; i < 10; ++i)
    row.push_back(this->add("c", i == 4 ? "the parcel number is 77" : "chat " + std::to_string(i)));
  EXPECT_EQ(this->ids("c", "parcel", 0, row[4]).size(), 0u);  // at or above before_id: verbatim
  EXPECT_EQ(this->ids("c", "parcel", row[4], 1'000'000).size(), 0u);
  EXPECT_EQ(this->ids("c", "parcel", row[3], row[5]).size(), 1u);
  const auto n = this->b_->index.neighbours("c", row[4], 1, row[0], row[9]);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].history_id, row[3]);
  EXPECT_EQ(n[1].history_id, row[5]);
  EXPECT_EQ(this->b_->index.neighbours("c", row[4], 2, row[3], row[5]).size(), 0u);
}

TYPED_TEST(SearchIndexTest, DeletedAndEditedRowsLeaveTheIndex) {
  const int64_t id = this->add("c", "the wifi password is swordfish");
  for (int i = 0; i < 10; ++i) this->add("c", "other " + std::to_string(i));
  EXPECT_EQ(this->ids("c", "swordfish").size(), 1u);
  this->b_->exec("UPDATE history SET text = 'the wifi password changed' WHERE id = " +
                 std::to_string(id));
  EXPECT_EQ(this->ids("c", "swordfish").size(), 0u);
  this->b_->exec("DELETE FROM history WHERE id = " + std::to_string(id));
  EXPECT_EQ(this->ids("c", "wifi").size(), 0u);
}

TYPED_TEST(SearchIndexTest, CommonTermsAreDropped) {
  for (int i = 0; i < 60; ++i) this->add("c", "hello there friend " + std::to_string(i));
  const int64_t rare = this->add("c", "hello, the zeppelin lands at dawn");
  this->b_->index.catch_up("c");
  const auto r =
      this->b_->index.search_history("c", tokens::search_terms("hello zeppelin"), 0, 1'000'000, 5);
  ASSERT_EQ(r.terms.size(), 1u);
  EXPECT_EQ(r.terms[0], "zeppelin");
  EXPECT_EQ(r.candidates.front().message.history_id, rare);
  EXPECT_GT(r.query_idf, 0);
  // Only common words: nothing is searched.
  EXPECT_TRUE(
      this->b_->index.search_history("c", tokens::search_terms("hello friend"), 0, 1'000'000, 5)
          .terms.empty());
  // No known word: nothing.
  EXPECT_TRUE(
      this->b_->index.search_history("c", {"qwertyuiop"}, 0, 1'000'000, 5).candidates.empty());
}

TYPED_TEST(SearchIndexTest, DocumentsForEveryChatAndForOneChat) {
  this->b_->exec(
      "INSERT INTO documents(chat_id, title, text) VALUES (NULL, 'Refunds', 'Refunds take 14 "
      "days.'),"
      " ('vip', 'VIP refunds', 'VIP refunds take 2 days.'), ('other', 'X', 'refunds for other')");
  this->b_->index.catch_up("c");
  auto r =
      this->b_->index.search_documents("c", tokens::search_terms("how long do refunds take"), 10);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].title, "Refunds");
  r = this->b_->index.search_documents("vip", tokens::search_terms("refunds"), 10);
  EXPECT_EQ(r.candidates.size(), 2u);
}

TYPED_TEST(SearchIndexTest, APassedDeadlineInterruptsTheSearch) {
  for (int i = 0; i < 2000; ++i)
    this->add("c", (i % 20 == 0 ? "alpha beta " : "gamma ") + std::to_string(i));
  this->b_->index.index_all();  // all of it (a catch-up stops at its time budget)
  this->b_->index.set_deadline(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_ANY_THROW(this->b_->index.search_history("c", {"alpha", "beta"}, 0, 1'000'000, 40));
  this->b_->index.set_deadline(std::nullopt);
  EXPECT_FALSE(this->b_->index.search_history("c", {"alpha"}, 0, 1'000'000, 40).candidates.empty());
}

TYPED_TEST(SearchIndexTest, IndexAllIndexesEveryChatAndHistoryFromBeforeTheMigration) {
  this->add("a", "apples");
  this->add("b", "bananas");
  EXPECT_EQ(this->b_->index.index_all(), 2);
  EXPECT_EQ(this->b_->index.index_all(), 0);
  EXPECT_EQ(this->ids("b", "banana").size(), 1u);
}

TYPED_TEST(SearchIndexTest, TermCountsFollowInsertsEditsAndDeletes) {
  auto& b = *this->b_;
  const int64_t a = this->add("c", "zebra crossing");
  this->add("c", "zebra stripes");
  b.index.catch_up("c");
  EXPECT_EQ(b.overall("zebra"), 2);
  const auto chat_rows = [&] {
    return b.num("SELECT rows FROM search_term_rows WHERE source = 'history' AND chat = '" +
                 chat_token("c") + "' AND term = ''");
  };
  EXPECT_EQ(chat_rows(), 2);
  b.exec("UPDATE history SET text = 'giraffe crossing' WHERE id = " + std::to_string(a));
  b.index.catch_up("c");
  EXPECT_EQ(b.overall("zebra"), 1);
  EXPECT_EQ(b.overall("giraff"), 1);
  b.exec("DELETE FROM history WHERE id = " + std::to_string(a));
  b.index.catch_up("c");
  EXPECT_EQ(b.overall("giraff"), 0);
  EXPECT_EQ(chat_rows(), 1);
  // A chat's counts that reach 0 are not kept; the source's overall count is.
  EXPECT_EQ(b.num("SELECT count(*) FROM search_term_rows WHERE term = 'giraff' AND chat <> ''"), 0);
  EXPECT_EQ(b.overall(""), 1);
}

TYPED_TEST(SearchIndexTest, ATermInMostDocumentsIsCommonAndNotSearched) {
  this->b_->in_transaction([&] {
    for (int i = 0; i < 300; ++i)
      this->b_->exec("INSERT INTO documents(title, text) VALUES ('p', 'our policy on item " +
                     std::to_string(i) + "')");
    this->b_->exec("INSERT INTO documents(title, text) VALUES ('r', 'refund policy: 14 days')");
  });
  this->b_->index.index_all();
  EXPECT_TRUE(
      this->b_->index.search_documents("c", tokens::search_query_terms("the store policy?"), 10)
          .candidates.empty());
  const auto refund =
      this->b_->index.search_documents("c", tokens::search_query_terms("the refund policy?"), 10);
  EXPECT_EQ(refund.terms, std::vector<std::string>{"refund"});
  ASSERT_EQ(refund.candidates.size(), 1u);
}

TYPED_TEST(SearchIndexTest, ABigChatIsSearchedWithoutItsTokenAndStillOnlyItsOwnRows) {
  this->b_->in_transaction([&] {
    // Another chat's rows match better and come first: they must not crowd out big's own.
    for (int i = 0; i < 300; ++i) this->add("other", "ferry ferry Tallinn Tallinn");
    for (int64_t i = 0; i < kBigChatRows + 10; ++i)
      this->add("big",
                i == 77 ? "the ferry to Tallinn leaves at noon" : "row " + std::to_string(i % 50));
  });
  const int64_t small = this->add("small", "my ferry to Tallinn was late");
  EXPECT_EQ(this->b_->index.index_all(), kBigChatRows + 311);
  const auto big = this->ids("big", "ferry Tallinn");
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(big[0], 378);
  EXPECT_EQ(this->ids("small", "ferry Tallinn"), std::vector<int64_t>{small});
}

TYPED_TEST(SearchIndexTest, WhenEveryTermIsCommonTheRarestAreSearchedTogether) {
  int64_t fact = 0;
  this->b_->in_transaction([&] {
    // gym, locker and code each in about 400 of 3 000 rows (common: over 10 %), all three
    // together in one.
    for (int i = 0; i < 3000; ++i) {
      const char* word = i % 7 == 0 ? "gym" : i % 7 == 1 ? "locker" : i % 7 == 2 ? "code" : "tea";
      this->add("c", std::string("talk about the ") + word + " number " + std::to_string(i));
    }
    fact = this->add("c", "My gym locker code is 4471");
  });
  this->b_->index.index_all();  // catch_up alone indexes for 100 ms at most
  const auto hits = this->ids("c", "What is my gym locker code?");
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front(), fact);
  EXPECT_EQ(hits.size(), 1u);  // only the message holding all of them
}

TYPED_TEST(SearchIndexTest, ATermCommonInAnotherChatIsStillSearchedInThisOne) {
  for (int i = 0; i < 200; ++i) this->add("other", "locker code talk " + std::to_string(i));
  const int64_t fact = this->add("me", "my locker code at the gym is 4471");
  for (int i = 0; i < 60; ++i) this->add("me", "weather chat " + std::to_string(i));
  EXPECT_EQ(this->ids("me", "what is my locker code?"), std::vector<int64_t>{fact});
}

TYPED_TEST(SearchIndexTest, AFewBetterMatchesOfAnotherChatDoNotCrowdOutThisChatsRows) {
  // Under kMaxForeignRows the search takes that many more winners and drops the other chat's.
  for (int i = 0; i < 50; ++i) this->add("other", "ferry ferry Tallinn Tallinn");
  std::vector<int64_t> mine;
  for (int i = 0; i < 12; ++i)
    mine.push_back(this->add("me", "a ferry to Tallinn, trip " + std::to_string(i)));
  for (int i = 0; i < 200; ++i) this->add("me", "weather chat " + std::to_string(i));
  this->b_->index.index_all();
  const auto hits = this->ids("me", "ferry Tallinn");
  ASSERT_EQ(hits.size(), 10u);
  for (const int64_t id : hits)
    EXPECT_NE(std::find(mine.begin(), mine.end(), id), mine.end()) << id;
}

TEST(PinsTest, PinsAreStoredPerChatOldestFirst) {
  testing::TestDb t_;
  const int64_t a = add_pin(t_.db(), "c", "prefers metric units");
  add_pin(t_.db(), "c", "name: Ada");
  add_pin(t_.db(), "d", "other chat");
  db::StatementCache cache(t_.db());
  auto pins = load_pins(cache, "c");
  ASSERT_EQ(pins.size(), 2u);
  EXPECT_EQ(pins[0].text, "prefers metric units");
  EXPECT_TRUE(remove_pin(t_.db(), "c", a));
  EXPECT_FALSE(remove_pin(t_.db(), "d", a));
  EXPECT_EQ(load_pins(cache, "c").size(), 1u);
  // A prompt reads only the newest kMaxPins, still oldest first.
  for (int i = 0; i < 60; ++i) add_pin(t_.db(), "many", "pin " + std::to_string(i));
  pins = load_pins(cache, "many", static_cast<int64_t>(context::kMaxPins));
  ASSERT_EQ(pins.size(), context::kMaxPins);
  EXPECT_EQ(pins.front().text, "pin 10");
  EXPECT_EQ(pins.back().text, "pin 59");
  EXPECT_EQ(load_pins(cache, "many").size(), 60u);
}

}  // namespace
}  // namespace autonous::store
