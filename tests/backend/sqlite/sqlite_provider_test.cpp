#include "internal/backend/sqlite/sqlite_provider.h"

#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include "tests/support/test_db.h"

namespace autonous::store {
namespace {

void add(SQLite::Database& db, const std::string& chat, const std::string& role,
         const std::string& text) {
  SQLite::Statement ins(db, "INSERT INTO history(chat_id, role, text) VALUES (?, ?, ?)");
  ins.bind(1, chat);
  ins.bind(2, role);
  ins.bind(3, text);
  ins.exec();
}

TEST(SQLiteProviderTest, ReturnsNewestRowsOldestFirst) {
  testing::TestDb t;
  for (int i = 0; i < 10; ++i)
    add(t.db(), "a", i % 2 ? "assistant" : "user", "m" + std::to_string(i));
  SQLiteProvider p(t.db());
  const auto got = p.get_history("a", 3, 0);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].content, "m7");
  EXPECT_EQ(got[1].content, "m8");
  EXPECT_EQ(got[2].content, "m9");
  EXPECT_EQ(got[0].role, common::Role::kAssistant);
  EXPECT_LT(got[0].history_id, got[2].history_id);
}

TEST(SQLiteProviderTest, LeavesOtherChatsOut) {
  testing::TestDb t;
  add(t.db(), "a", "user", "a1");
  add(t.db(), "b", "user", "b1");
  add(t.db(), "a", "assistant", "a2");
  add(t.db(), "ab", "user", "not a");
  SQLiteProvider p(t.db());
  const auto got = p.get_history("a", 50, 0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].content, "a1");
  EXPECT_EQ(got[1].content, "a2");
  EXPECT_TRUE(p.get_history("nobody", 50, 0).empty());
  EXPECT_TRUE(p.get_history("a", 0, 0).empty());
}

TEST(SQLiteProviderTest, ReturnsStoredBytesEvenWhenInvalidUtf8) {
  testing::TestDb t;
  SQLite::Statement ins(t.db(), "INSERT INTO history(chat_id, role, text) VALUES ('a', 'user', ?)");
  const std::string raw("x\xFF\x00y", 4);
  ins.bind(1, raw.data(),
           static_cast<int>(raw.size()));  // as a BLOB, as a careless front end might
  ins.exec();
  SQLiteProvider p(t.db());
  EXPECT_EQ(p.get_history("a", 5, 0)[0].content, raw);
}

TEST(SQLiteProviderTest, QueryUsesTheChatIndex) {
  testing::TestDb t;
  SQLite::Statement plan(t.db(),
                         "EXPLAIN QUERY PLAN SELECT id, role, text FROM history INDEXED BY "
                         "history_by_chat WHERE chat_id = ? ORDER BY id DESC LIMIT ?");
  std::string details;
  while (plan.executeStep()) details += plan.getColumn(3).getString() + "\n";
  EXPECT_NE(details.find("USING INDEX history_by_chat (chat_id=?)"), std::string::npos) << details;
  EXPECT_EQ(details.find("TEMP B-TREE"), std::string::npos) << details;  // no sort step
}

}  // namespace
}  // namespace autonous::store
