// SearchIndex on a real, migrated SQLite file: rows written by plain SQL (as a front end
// would) are queued by triggers and indexed by catch_up; CJK two-character words, stems, the
// id range, neighbours, documents, deletes and the deadline.
#include "internal/store/search_index.h"

#include <thread>

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <gtest/gtest.h>

#include "internal/db/statement_cache.h"
#include "internal/store/chat_settings_store.h"
#include "internal/tokens/search_terms.h"
#include "tests/support/test_db.h"

namespace autonous::store {
namespace {

class SearchIndexTest : public ::testing::Test {
 protected:
  int64_t add(const std::string& chat, const std::string& text, const std::string& role = "user") {
    SQLite::Statement q(t_.db(), "INSERT INTO history(chat_id, role, text) VALUES (?, ?, ?)");
    q.bind(1, chat);
    q.bind(2, role);
    q.bind(3, text);
    q.exec();
    return t_.db().getLastInsertRowid();
  }
  int64_t queued() { return t_.db().execAndGet("SELECT count(*) FROM search_queue").getInt64(); }
  std::vector<int64_t> ids(const std::string& chat, const std::string& question, int64_t after = 0,
                           int64_t before = 1'000'000) {
    index_.catch_up(chat);
    std::vector<int64_t> out;
    for (const auto& c :
         index_.search_history(chat, tokens::search_terms(question), after, before, 10).candidates)
      out.push_back(c.message.history_id);
    return out;
  }
  testing::TestDb t_;
  SearchIndex index_{t_.db()};
};

TEST_F(SearchIndexTest, PlainSqlInsertsAreQueuedAndIndexedOnCatchUp) {
  const int64_t fact = add("c", "My locker code is 4471");
  for (int i = 0; i < 30; ++i) add("c", "nothing to see here " + std::to_string(i));
  EXPECT_EQ(queued(), 31);
  const auto hits = ids("c", "what is the locker code?");
  EXPECT_EQ(queued(), 0);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front(), fact);
  // Another chat's rows are not this chat's.
  add("other", "my locker code is 9999");
  EXPECT_EQ(ids("c", "locker code").size(), 1u);
}

TEST_F(SearchIndexTest, CatchUpIndexesTheChatAndDocumentsTheBacklogAnyChat) {
  // 20 rows a chat: well within a catch-up's time budget, even under a sanitizer.
  for (int i = 0; i < 40; ++i) add(i % 2 ? "a" : "b", "row " + std::to_string(i));
  t_.db().exec("INSERT INTO documents(title, text) VALUES ('t', 'a document')");
  index_.catch_up("a");
  EXPECT_EQ(t_.db().execAndGet("SELECT count(*) FROM search_queue WHERE chat_id = 'a'").getInt64(),
            0);
  EXPECT_EQ(t_.db().execAndGet("SELECT count(*) FROM search_queue WHERE chat_id = 'b'").getInt64(),
            20);
  EXPECT_EQ(
      t_.db().execAndGet("SELECT count(*) FROM search_queue WHERE source = 'document'").getInt64(),
      0);
  EXPECT_EQ(index_.index_backlog(std::chrono::seconds(5)), 20);
  EXPECT_EQ(queued(), 0);
  EXPECT_EQ(index_.index_backlog(std::chrono::seconds(5)), 0);
}

TEST_F(SearchIndexTest, AnIndexingBudgetStopsWithinABatch) {
  for (int i = 0; i < 600; ++i) add("a", "row " + std::to_string(i));
  const int64_t n = index_.index_backlog(std::chrono::milliseconds(0));
  EXPECT_GE(n, 1);    // always some progress
  EXPECT_LT(n, 250);  // not a whole batch past the budget
  EXPECT_EQ(queued(), 600 - n);
}

TEST_F(SearchIndexTest, ChineseAndJapaneseTwoCharacterWordsAndRussianFormsMatch) {
  const int64_t zh = add("c", "我的新地址是北京市朝阳区建国路88号");
  const int64_t ja = add("c", "私の誕生日は三月十日です");
  const int64_t ru = add("c", "Мой адрес: улица Ленина, дом 5");
  for (int i = 0; i < 20; ++i) add("c", "filler 随便说说 いろいろ всякое " + std::to_string(i));
  EXPECT_EQ(ids("c", "我的地址是什么？").front(), zh);
  EXPECT_EQ(ids("c", "誕生日はいつ？").front(), ja);
  EXPECT_EQ(ids("c", "какой у меня адреса?").front(), ru);
}

TEST_F(SearchIndexTest, OnlyTheGivenIdRangeIsSearchedAndNeighboursStayInIt) {
  std::vector<int64_t> row;
  for (int i = 0; i < 10; ++i)
    row.push_back(add("c", i == 4 ? "the parcel number is 77" : "chat " + std::to_string(i)));
  EXPECT_EQ(ids("c", "parcel", 0, row[4]).size(), 0u);  // at or above before_id: verbatim
  EXPECT_EQ(ids("c", "parcel", row[4], 1'000'000).size(), 0u);
  EXPECT_EQ(ids("c", "parcel", row[3], row[5]).size(), 1u);
  const auto n = index_.neighbours("c", row[4], 1, row[0], row[9]);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].history_id, row[3]);
  EXPECT_EQ(n[1].history_id, row[5]);
  EXPECT_EQ(index_.neighbours("c", row[4], 2, row[3], row[5]).size(), 0u);
}

TEST_F(SearchIndexTest, DeletedAndEditedRowsLeaveTheIndex) {
  const int64_t id = add("c", "the wifi password is swordfish");
  for (int i = 0; i < 10; ++i) add("c", "other " + std::to_string(i));
  EXPECT_EQ(ids("c", "swordfish").size(), 1u);
  t_.db().exec("UPDATE history SET text = 'the wifi password changed' WHERE id = " +
               std::to_string(id));
  EXPECT_EQ(ids("c", "swordfish").size(), 0u);
  t_.db().exec("DELETE FROM history WHERE id = " + std::to_string(id));
  EXPECT_EQ(ids("c", "wifi").size(), 0u);
}

TEST_F(SearchIndexTest, CommonTermsAreDropped) {
  for (int i = 0; i < 60; ++i) add("c", "hello there friend " + std::to_string(i));
  const int64_t rare = add("c", "hello, the zeppelin lands at dawn");
  index_.catch_up("c");
  const auto r =
      index_.search_history("c", tokens::search_terms("hello zeppelin"), 0, 1'000'000, 5);
  ASSERT_EQ(r.terms.size(), 1u);
  EXPECT_EQ(r.terms[0], "zeppelin");
  EXPECT_EQ(r.candidates.front().message.history_id, rare);
  EXPECT_GT(r.query_idf, 0);
  // Only common words: nothing is searched.
  EXPECT_TRUE(index_.search_history("c", tokens::search_terms("hello friend"), 0, 1'000'000, 5)
                  .terms.empty());
  // No known word: nothing.
  EXPECT_TRUE(index_.search_history("c", {"qwertyuiop"}, 0, 1'000'000, 5).candidates.empty());
}

TEST_F(SearchIndexTest, DocumentsForEveryChatAndForOneChat) {
  t_.db().exec(
      "INSERT INTO documents(chat_id, title, text) VALUES (NULL, 'Refunds', 'Refunds take 14 "
      "days.'),"
      " ('vip', 'VIP refunds', 'VIP refunds take 2 days.'), ('other', 'X', 'refunds for other')");
  index_.catch_up("c");
  auto r = index_.search_documents("c", tokens::search_terms("how long do refunds take"), 10);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].title, "Refunds");
  r = index_.search_documents("vip", tokens::search_terms("refunds"), 10);
  EXPECT_EQ(r.candidates.size(), 2u);
}

TEST_F(SearchIndexTest, APassedDeadlineInterruptsTheSearch) {
  for (int i = 0; i < 2000; ++i)
    add("c", (i % 20 == 0 ? "alpha beta " : "gamma ") + std::to_string(i));
  index_.index_all();  // all of it (a catch-up stops at its time budget)
  index_.set_deadline(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_ANY_THROW(index_.search_history("c", {"alpha", "beta"}, 0, 1'000'000, 40));
  index_.set_deadline(std::nullopt);
  EXPECT_FALSE(index_.search_history("c", {"alpha"}, 0, 1'000'000, 40).candidates.empty());
}

TEST_F(SearchIndexTest, IndexAllIndexesEveryChatAndHistoryFromBeforeTheMigration) {
  add("a", "apples");
  add("b", "bananas");
  EXPECT_EQ(index_.index_all(), 2);
  EXPECT_EQ(index_.index_all(), 0);
  EXPECT_EQ(ids("b", "banana").size(), 1u);
}

TEST_F(SearchIndexTest, TermCountsFollowInsertsEditsAndDeletes) {
  const auto rows = [&](const std::string& term) {
    return t_.db()
        .execAndGet(
            "SELECT coalesce((SELECT rows FROM search_term_rows WHERE source = 'history' "
            "AND term = '" +
            term + "'), 0)")
        .getInt64();
  };
  const int64_t a = add("c", "zebra crossing");
  add("c", "zebra stripes");
  index_.catch_up("c");
  EXPECT_EQ(rows("zebra"), 2);
  const auto chat_rows = [&] {
    return t_.db()
        .execAndGet("SELECT rows FROM search_term_rows WHERE source = 'history' AND chat = '" +
                    SearchIndex::chat_token("c") + "' AND term = ''")
        .getInt64();
  };
  EXPECT_EQ(chat_rows(), 2);
  t_.db().exec("UPDATE history SET text = 'giraffe crossing' WHERE id = " + std::to_string(a));
  index_.catch_up("c");
  EXPECT_EQ(rows("zebra"), 1);
  EXPECT_EQ(rows("giraff"), 1);
  t_.db().exec("DELETE FROM history WHERE id = " + std::to_string(a));
  index_.catch_up("c");
  EXPECT_EQ(rows("giraff"), 0);
  EXPECT_EQ(chat_rows(), 1);
  // Counts that reach 0 are not kept; the source's overall count is.
  EXPECT_EQ(
      t_.db().execAndGet("SELECT count(*) FROM search_term_rows WHERE term = 'giraff'").getInt64(),
      0);
  EXPECT_EQ(t_.db()
                .execAndGet("SELECT rows FROM search_term_rows WHERE source = 'history' AND chat = "
                            "'' AND term = ''")
                .getInt64(),
            1);
}

TEST_F(SearchIndexTest, ATermInMostDocumentsIsCommonAndNotSearched) {
  {
    SQLite::Transaction tx(t_.db());
    for (int i = 0; i < 300; ++i)
      t_.db().exec("INSERT INTO documents(title, text) VALUES ('p', 'our policy on item " +
                   std::to_string(i) + "')");
    t_.db().exec("INSERT INTO documents(title, text) VALUES ('r', 'refund policy: 14 days')");
    tx.commit();
  }
  index_.index_all();
  EXPECT_TRUE(index_.search_documents("c", tokens::search_query_terms("the store policy?"), 10)
                  .candidates.empty());
  const auto refund =
      index_.search_documents("c", tokens::search_query_terms("the refund policy?"), 10);
  EXPECT_EQ(refund.terms, std::vector<std::string>{"refund"});
  ASSERT_EQ(refund.candidates.size(), 1u);
}

TEST_F(SearchIndexTest, ABigChatIsSearchedWithoutItsTokenAndStillOnlyItsOwnRows) {
  {
    SQLite::Transaction tx(t_.db());
    // Another chat's rows match better and come first: they must not crowd out big's own.
    for (int i = 0; i < 300; ++i) add("other", "ferry ferry Tallinn Tallinn");
    for (int64_t i = 0; i < kBigChatRows + 10; ++i)
      add("big", i == 77 ? "the ferry to Tallinn leaves at noon" : "row " + std::to_string(i % 50));
    tx.commit();
  }
  const int64_t small = add("small", "my ferry to Tallinn was late");
  EXPECT_EQ(index_.index_all(), kBigChatRows + 311);
  const auto big = ids("big", "ferry Tallinn");
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(big[0], 378);
  EXPECT_EQ(ids("small", "ferry Tallinn"), std::vector<int64_t>{small});
}

TEST_F(SearchIndexTest, WhenEveryTermIsCommonTheRarestAreSearchedTogether) {
  int64_t fact = 0;
  {
    SQLite::Transaction tx(t_.db());
    // gym, locker and code each in about 400 of 3 000 rows (common: over 10 %), all three
    // together in one.
    for (int i = 0; i < 3000; ++i) {
      const char* word = i % 7 == 0 ? "gym" : i % 7 == 1 ? "locker" : i % 7 == 2 ? "code" : "tea";
      add("c", std::string("talk about the ") + word + " number " + std::to_string(i));
    }
    fact = add("c", "My gym locker code is 4471");
    tx.commit();
  }
  index_.index_all();  // catch_up alone indexes for 100 ms at most
  const auto hits = ids("c", "What is my gym locker code?");
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front(), fact);
  EXPECT_EQ(hits.size(), 1u);  // only the message holding all of them
}

TEST_F(SearchIndexTest, ATermCommonInAnotherChatIsStillSearchedInThisOne) {
  for (int i = 0; i < 200; ++i) add("other", "locker code talk " + std::to_string(i));
  const int64_t fact = add("me", "my locker code at the gym is 4471");
  for (int i = 0; i < 60; ++i) add("me", "weather chat " + std::to_string(i));
  EXPECT_EQ(ids("me", "what is my locker code?"), std::vector<int64_t>{fact});
}

TEST_F(SearchIndexTest, AFewBetterMatchesOfAnotherChatDoNotCrowdOutThisChatsRows) {
  // Under kMaxForeignRows the search takes that many more winners and drops the other chat's.
  for (int i = 0; i < 50; ++i) add("other", "ferry ferry Tallinn Tallinn");
  std::vector<int64_t> mine;
  for (int i = 0; i < 12; ++i)
    mine.push_back(add("me", "a ferry to Tallinn, trip " + std::to_string(i)));
  for (int i = 0; i < 200; ++i) add("me", "weather chat " + std::to_string(i));
  index_.index_all();
  const auto hits = ids("me", "ferry Tallinn");
  ASSERT_EQ(hits.size(), 10u);
  for (const int64_t id : hits)
    EXPECT_NE(std::find(mine.begin(), mine.end(), id), mine.end()) << id;
}

TEST_F(SearchIndexTest, PinsAreStoredPerChatOldestFirst) {
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
