#include "internal/engine/chat_settings_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include "internal/backend/sqlite/sqlite_provider.h"
#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/stores.h"
#include "tests/support/test_db.h"

namespace autonous::store {
namespace {

class ChatSettingsStoreTest : public ::testing::Test {
 protected:
  void add_history(const std::string& chat, const std::string& text) {
    SQLite::Statement q(db_.db(), "INSERT INTO history(chat_id, role, text) VALUES (?, 'user', ?)");
    q.bind(1, chat);
    q.bind(2, text);
    q.exec();
  }
  testing::TestDb db_;
};

TEST_F(ChatSettingsStoreTest, DefaultsWithoutARow) {
  const engine::ChatState s = SQLiteProvider(db_.db()).chat_state("nobody");
  EXPECT_EQ(s.settings_json, "{}");
  EXPECT_EQ(s.cleared_through, 0);
}

TEST_F(ChatSettingsStoreTest, SaveResetAndSurviveReopening) {
  save_overrides(db_.db(), "c", R"({"strategy":"sliding_window"})");
  save_overrides(db_.db(), "c", R"({"recent_messages":3})");  // replaces
  {
    auto other = db_.open_connection();  // another process's view
    EXPECT_EQ(SQLiteProvider(*other).chat_state("c").settings_json, R"({"recent_messages":3})");
  }
  EXPECT_TRUE(reset_overrides(db_.db(), "c"));
  EXPECT_FALSE(reset_overrides(db_.db(), "c"));
  EXPECT_FALSE(reset_overrides(db_.db(), "never-set"));
  EXPECT_EQ(SQLiteProvider(db_.db()).chat_state("c").settings_json, "{}");
}

TEST_F(ChatSettingsStoreTest, TheTableRefusesNonObjects) {
  EXPECT_THROW(save_overrides(db_.db(), "c", "[1,2]"), SQLite::Exception);
  EXPECT_THROW(save_overrides(db_.db(), "c", "nope"), SQLite::Exception);
}

TEST_F(ChatSettingsStoreTest, ClearHidesOlderHistoryAndKeepsTheRows) {
  add_history("c", "one");
  add_history("other", "x");
  add_history("c", "two");
  save_overrides(db_.db(), "c", R"({"recent_messages":3})");
  const int64_t through = clear_context(db_.db(), "c");
  EXPECT_EQ(through, 3);
  EXPECT_EQ(SQLiteProvider(db_.db()).chat_state("c").settings_json,
            R"({"recent_messages":3})");  // kept
  SQLiteProvider provider(db_.db());
  EXPECT_TRUE(provider.get_history("c", 50, provider.chat_state("c").cleared_through).empty());
  add_history("c", "three");
  const auto after = provider.get_history("c", 50, provider.chat_state("c").cleared_through);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].content, "three");
  EXPECT_EQ(provider.get_history("c", 50, 0).size(), 3u);  // nothing deleted
  EXPECT_EQ(clear_context(db_.db(), "empty-chat"), 0);
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
  pins = load_pins(cache, "many", static_cast<int64_t>(engine::kMaxPins));
  ASSERT_EQ(pins.size(), engine::kMaxPins);
  EXPECT_EQ(pins.front().text, "pin 10");
  EXPECT_EQ(pins.back().text, "pin 59");
  EXPECT_EQ(load_pins(cache, "many").size(), 60u);
}

}  // namespace
}  // namespace autonous::store
