// What recall's search does the same on both backends (search_plan.h): the chat token, term
// counting and the indexing schedule. The backends' own behaviour is in search_index_test.cpp.
#include "internal/recall/search_plan.h"

#include <thread>

#include <gtest/gtest.h>

namespace autonous::recall {
namespace {

TEST(SearchPlanTest, TheChatTokenIsTheStoredHashInHexAfterAC) {
  // Stored in every index: these values must never change.
  EXPECT_EQ(chat_token(""), "c14650fb0739d0383");
  EXPECT_EQ(chat_token("a"), "c44bd8ad473cd9906");
  EXPECT_NE(chat_token("chat-1"), chat_token("chat-2"));
  EXPECT_EQ(chat_token("chat-1").size(), 17u);
}

TEST(SearchPlanTest, CountTermsCountsEachDistinctTermOncePerRow) {
  TermCounts counts;
  count_terms("c1", "river stone river  stone garden", 1, counts);
  EXPECT_EQ((counts[{"", "river"}]), 1);
  EXPECT_EQ((counts[{"c1", "river"}]), 1);
  EXPECT_EQ((counts[{"c1", "garden"}]), 1);
  EXPECT_EQ((counts[{"c1", ""}]), 1);  // the chat's rows
  EXPECT_EQ((counts[{"", ""}]), 1);    // the source's rows
  count_terms("c1", "river", -1, counts);
  EXPECT_EQ((counts[{"c1", "river"}]), 0);
  EXPECT_EQ((counts[{"", ""}]), 0);
  EXPECT_EQ(counts.count({"c1", "garden"}), 1u);
  EXPECT_EQ(counts.size(), 8u);  // river, stone, garden twice each, and the two row counts: no
                                 // empty term from the double space
}

TEST(SearchPlanTest, IndexAllDrainsHistoryThenDocumentsInFullBatches) {
  std::map<std::string, int64_t> queued{{"history", kBatch * 2 + 5}, {"document", 3}};
  std::vector<std::string> order;
  const int64_t n =
      index_all([&](const std::string& source, const std::optional<std::string>& chat, int limit,
                    std::optional<std::chrono::steady_clock::time_point> until) {
        EXPECT_FALSE(chat.has_value());
        EXPECT_FALSE(until.has_value());
        EXPECT_EQ(limit, kBatch);
        order.push_back(source);
        const int64_t k = std::min<int64_t>(limit, queued[source]);
        queued[source] -= k;
        return k;
      });
  EXPECT_EQ(n, kBatch * 2 + 8);
  EXPECT_EQ(order, (std::vector<std::string>{"history", "history", "history", "document"}));
}

TEST(SearchPlanTest, IndexWithinStopsAtItsBudgetAndGivesDocumentsToEveryChat) {
  std::vector<std::optional<std::string>> chats;
  int calls = 0;
  const auto slow = [&](const std::string& source, const std::optional<std::string>& chat,
                        int limit, std::optional<std::chrono::steady_clock::time_point> until) {
    EXPECT_TRUE(until.has_value());
    EXPECT_EQ(limit, kTimedBatch);
    chats.push_back(source == "history" ? chat : std::optional<std::string>("doc"));
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return static_cast<int64_t>(limit);  // always a full batch: only the budget stops it
  };
  const auto start = std::chrono::steady_clock::now();
  const int64_t n = index_within(slow, std::string("c7"),
                                 std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(calls, 2);
  EXPECT_EQ(n, static_cast<int64_t>(calls) * kTimedBatch);
  EXPECT_LT(took, std::chrono::seconds(2));
  for (const auto& c : chats) EXPECT_EQ(c, std::optional<std::string>("c7"));  // budget spent

  // A small backlog: the chat's rows, then the documents, whatever their chat.
  std::vector<std::string> sources;
  index_within(
      [&](const std::string& source, const std::optional<std::string>& chat, int,
          std::optional<std::chrono::steady_clock::time_point>) {
        sources.push_back(source + ":" + chat.value_or("*"));
        return int64_t{1};
      },
      std::string("c7"), std::chrono::steady_clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(sources, (std::vector<std::string>{"history:c7", "document:*"}));

  // A deadline already passed (the PostgreSQL index spent it folding): one batch, no documents.
  sources.clear();
  index_within(
      [&](const std::string& source, const std::optional<std::string>& chat, int limit,
          std::optional<std::chrono::steady_clock::time_point>) {
        sources.push_back(source + ":" + chat.value_or("*"));
        return static_cast<int64_t>(limit);
      },
      std::string("c7"), std::chrono::steady_clock::now() - std::chrono::milliseconds(1));
  EXPECT_EQ(sources, (std::vector<std::string>{"history:c7"}));
}

}  // namespace
}  // namespace autonous::recall
