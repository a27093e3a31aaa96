// SearchIndex's embeddings part on a real, migrated SQLite file: which rows still need a vector
// (new ones oldest first, edited ones again), the triggers on edit and delete, and the vector
// search's ranking, range, chat and dimension checks.
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include "internal/backend/sqlite/search_index.h"
#include "tests/support/test_db.h"

namespace autonous::store {
namespace {

class SearchVectorsTest : public ::testing::Test {
 protected:
  int64_t add(const std::string& chat, const std::string& text) {
    SQLite::Statement q(t_.db(), "INSERT INTO history(chat_id, role, text) VALUES (?, 'user', ?)");
    q.bind(1, chat);
    q.bind(2, text);
    q.exec();
    return t_.db().getLastInsertRowid();
  }
  std::vector<int64_t> unembedded(const std::string& chat, const std::string& model, int limit) {
    std::vector<int64_t> out;
    for (const auto& m : index_.unembedded(chat, model, limit)) out.push_back(m.history_id);
    return out;
  }
  void store(const std::string& chat, const std::vector<int64_t>& ids, const std::string& model,
             std::vector<float> v = {1, 0}) {
    std::vector<std::pair<int64_t, std::vector<float>>> vectors;
    for (const int64_t id : ids) vectors.emplace_back(id, v);
    index_.store_vectors(chat, model, vectors);
  }
  std::vector<std::pair<int64_t, double>> search(const std::string& chat,
                                                 const std::vector<float>& q, int64_t after = 0,
                                                 int64_t before = 1000, int limit = 10) {
    std::vector<std::pair<int64_t, double>> out;
    for (const auto& c : index_.search_vectors(chat, "m", q, after, before, limit).candidates)
      out.emplace_back(c.message.history_id, c.cosine);
    return out;
  }
  int64_t count(const std::string& sql) { return t_.db().execAndGet(sql).getInt64(); }
  testing::TestDb t_;
  SearchIndex index_{t_.db()};
};

TEST_F(SearchVectorsTest, NewRowsOldestFirstThenEditedRowsAgainAndDeletesRemoveVectors) {
  std::vector<int64_t> c;
  for (int i = 0; i < 5; ++i) c.push_back(add("c", "message " + std::to_string(i)));
  add("d", "another chat");
  EXPECT_EQ(unembedded("c", "m", 3), (std::vector<int64_t>{c[0], c[1], c[2]}));
  store("c", {c[0], c[1], c[2]}, "m");
  EXPECT_EQ(unembedded("c", "m", 10), (std::vector<int64_t>{c[3], c[4]}));
  store("c", {c[3], c[4]}, "m");
  EXPECT_TRUE(unembedded("c", "m", 10).empty());
  EXPECT_EQ(unembedded("c", "other-model", 10).size(), 5u);  // vectors are per model
  // An edit (plain SQL, as a front end would) marks the vector stale: offered again first.
  t_.db().exec("UPDATE history SET text = 'changed' WHERE id = " + std::to_string(c[1]));
  const int64_t later = add("c", "newest");
  EXPECT_EQ(unembedded("c", "m", 10), (std::vector<int64_t>{c[1], later}));
  EXPECT_EQ(unembedded("c", "m", 1), (std::vector<int64_t>{c[1]}));
  store("c", {c[1], later}, "m");
  EXPECT_EQ(count("SELECT count(*) FROM history_vectors WHERE stale = 1"), 0);
  t_.db().exec("DELETE FROM history WHERE id = " + std::to_string(c[2]));
  EXPECT_EQ(count("SELECT count(*) FROM history_vectors WHERE id = " + std::to_string(c[2])), 0);
}

TEST_F(SearchVectorsTest, BestCosineFirstWithinTheRangeAndTheChatOnly) {
  const int64_t a = add("c", "a"), b = add("c", "b"), far = add("c", "far");
  const int64_t theirs = add("d", "d");
  store("c", {a}, "m", {1, 0});
  store("c", {b}, "m", {0.6F, 0.8F});
  store("c", {far}, "m", {0, 1});
  store("d", {theirs}, "m", {1, 0});
  auto hits = search("c", {1, 0}, 0, 1000, 2);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].first, a);
  EXPECT_DOUBLE_EQ(hits[0].second, 1.0);
  EXPECT_EQ(hits[1].first, b);
  EXPECT_NEAR(hits[1].second, 0.6, 1e-6);
  hits = search("c", {1, 0}, a, far);  // only ids in (a, far)
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].first, b);
  for (const auto& [id, cosine] : search("c", {1, 0})) EXPECT_NE(id, theirs);
}

TEST_F(SearchVectorsTest, StaleAndOtherSizedVectorsAreNotCompared) {
  const int64_t a = add("c", "a"), b = add("c", "b");
  store("c", {a}, "m", {1, 0});
  store("c", {b}, "m", {1, 0, 0});  // another model version's size
  EXPECT_EQ(search("c", {1, 0}).size(), 1u);
  t_.db().exec("UPDATE history SET text = 'edited' WHERE id = " + std::to_string(a));
  EXPECT_TRUE(search("c", {1, 0}).empty());
  EXPECT_TRUE(search("c", {}).empty());
}

}  // namespace
}  // namespace autonous::store
