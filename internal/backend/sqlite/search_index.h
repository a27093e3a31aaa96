#pragma once
// SearchIndex: recall's full-text search on SQLite FTS5 (migration 0007), the context engine's
// Searcher. Rows are indexed by their search terms (recall/search_terms.h) from search_queue,
// which triggers fill on every write, whoever writes: catch_up() indexes a chat's queued rows
// and the queued documents before a search (for kCatchUpBudget), index_all() everything
// (`autonous migrate`, the worker's start). A query keeps its kMaxQueryTerms rarest terms that
// occur at all and drops those in more than kCommonShare of the rows (they tell nothing apart
// and make the search slow); BM25 ranks (the chat column weighs nothing). A deadline interrupts a
// running query (SQLite's progress handler). Not thread-safe: one per connection.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "internal/recall/recall.h"
#include "internal/recall/search_plan.h"

namespace SQLite {
class Database;
}
namespace autonous::db {
class StatementCache;
}

namespace autonous::store {

class SearchIndex final : public recall::Searcher {
 public:
  // `db` must outlive the index.
  explicit SearchIndex(SQLite::Database& db);
  ~SearchIndex() override;
  SearchIndex(const SearchIndex&) = delete;
  SearchIndex& operator=(const SearchIndex&) = delete;

  // Indexes the chat's queued rows and the queued documents for up to kCatchUpBudget (an
  // import's backlog is spread over turns and idle moments).
  void catch_up(const std::string& chat_id) override;
  // Indexes any chat's queued rows and documents for up to `budget` (an idle worker); returns
  // how many.
  int64_t index_backlog(std::chrono::milliseconds budget);
  // Indexes every queued row (all chats, documents); returns how many. Throws SQLite::Exception.
  int64_t index_all();
  // Indexes the chat's queued rows inside the caller's write transaction (the worker: a turn's
  // user/assistant pair, in the reply's transaction, so a turn costs no commit of its own).
  void index_in_transaction(const std::string& chat_id);

  recall::SearchResult search_history(const std::string& chat_id,
                                      const std::vector<std::string>& terms, int64_t after_id,
                                      int64_t before_id, int limit) override;
  recall::SearchResult search_documents(const std::string& chat_id,
                                        const std::vector<std::string>& terms, int limit) override;
  std::vector<common::Message> neighbours(const std::string& chat_id, int64_t id, int count,
                                          int64_t after_id, int64_t before_id) override;
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) override;

  // Embeddings (migration 0008, search_vectors.cpp). The vector search compares the
  // question with the newest kMaxVectorRows vectors in range (a linear scan).
  std::vector<common::Message> unembedded(const std::string& chat_id, const std::string& model,
                                          int limit) override;
  void store_vectors(const std::string& chat_id, const std::string& model,
                     const std::vector<std::pair<int64_t, std::vector<float>>>& vectors) override;
  recall::SearchResult search_vectors(const std::string& chat_id, const std::string& model,
                                      const std::vector<float>& query, int64_t after_id,
                                      int64_t before_id, int limit) override;

 private:
  struct Query {
    std::string match;
    std::vector<std::string> terms;
    std::vector<int64_t> rows;  // each term's rows in the searched part
    double searched = 0;        // rows of the searched part
    double idf = 0;
    int64_t foreign = 0;  // rows of other chats the terms match, at most
  };
  // Indexes up to `limit` queued rows of `source` (of `chat_id` when given); returns how many.
  // A queued row as it is now: its chat and text (nullopt text: the row is gone).
  struct QueuedRow {
    int64_t id;
    std::optional<std::string> chat;
    std::optional<std::string> text;
  };
  bool any_queued(const std::string& source, const std::optional<std::string>& chat_id);
  std::vector<QueuedRow> read_queued(const std::string& source,
                                     const std::optional<std::string>& chat_id, int limit);
  // Replaces the row's index entry (none when it is gone), counts the change, unqueues it.
  void reindex(const std::string& source, const QueuedRow& row, recall::TermCounts& counts);
  void add_counts(const std::string& source, const recall::TermCounts& counts);
  // Indexes up to `limit` queued rows; with `until`, stops after the row that passes it.
  int64_t index_queued(const std::string& source, const std::optional<std::string>& chat_id,
                       int limit, bool in_transaction = false,
                       std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  int64_t index_within(const std::optional<std::string>& chat_id, std::chrono::milliseconds budget);
  // index_queued as the shared indexing schedule calls it (search_plan.h).
  recall::IndexQueued batches();
  // The query for `terms` in `chat` (its token; "" for all rows).
  Query query(const std::string& table, const std::string& chat,
              const std::vector<std::string>& terms);
  int64_t rows(const std::string& table);
  // The chat's messages for ranked (id, score) hits, in order, at most `limit`; each with its
  // stored search terms. `cosine`: the score is a similarity, not BM25.
  std::vector<recall::Candidate> read_candidates(
      const std::string& chat_id, const std::vector<std::pair<int64_t, double>>& hits, int limit,
      bool cosine);
  // How many indexed rows of `source` in `chat` ("" : all) hold `term` ("" : the chat's rows).
  int64_t rows_with(const std::string& source, const std::string& chat, const std::string& term);

  SQLite::Database& db_;
  std::unique_ptr<db::StatementCache> cache_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
};

}  // namespace autonous::store
