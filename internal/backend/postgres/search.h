#pragma once
// PgSearchIndex: recall's search on PostgreSQL (migrations/postgres/0007), the context engine's
// Searcher. The same design as SearchIndex (search_index.h) on the same tables: triggers queue
// every written row in search_queue; autonous indexes queued rows by their search terms
// (recall/search_terms.h: ICU words, CJK two-character pieces, stems), which a GIN index over
// array_to_tsvector(terms) finds (the terms are stored already split, so no text search
// configuration rewrites them and CJK pieces match as they are); the query plan is SearchIndex's
// (search_plan.h), and BM25 is computed over the matched rows (at most kMaxPostings, by the plan)
// with the average length of those rows. Concurrent workers index disjoint queued rows
// (FOR UPDATE SKIP LOCKED); a chat's term counts are updated in place (only its own turns write
// them), the overall counts through a write buffer folded by one worker at a time
// (migrations/postgres/0010). A deadline becomes the
// session's statement_timeout. Not thread-safe: one per connection.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/message.h"
#include "internal/recall/recall.h"
#include "internal/recall/search_plan.h"

namespace autonous::db::pg {
class Connection;
class Result;
}  // namespace autonous::db::pg

namespace autonous::store {

class PgSearchIndex final : public recall::Searcher {
 public:
  // `c` must outlive the index.
  explicit PgSearchIndex(db::pg::Connection& c) : c_(c) {}

  void catch_up(const std::string& chat_id) override;
  int64_t index_backlog(std::chrono::milliseconds budget);
  int64_t index_all();
  void index_in_transaction(const std::string& chat_id);

  recall::SearchResult search_history(const std::string& chat_id,
                                      const std::vector<std::string>& terms, int64_t after_id,
                                      int64_t before_id, int limit) override;
  recall::SearchResult search_documents(const std::string& chat_id,
                                        const std::vector<std::string>& terms, int limit) override;
  std::vector<common::Message> neighbours(const std::string& chat_id, int64_t id, int count,
                                          int64_t after_id, int64_t before_id) override;
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) override;

  std::vector<common::Message> unembedded(const std::string& chat_id, const std::string& model,
                                          int limit) override;
  void store_vectors(const std::string& chat_id, const std::string& model,
                     const std::vector<std::pair<int64_t, std::vector<float>>>& vectors) override;
  recall::SearchResult search_vectors(const std::string& chat_id, const std::string& model,
                                      const std::vector<float>& query, int64_t after_id,
                                      int64_t before_id, int limit) override;

 private:
  int64_t index_queued(const std::string& source, const std::optional<std::string>& chat_id,
                       int limit, bool in_transaction,
                       std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  int64_t index_within(const std::optional<std::string>& chat_id, std::chrono::milliseconds budget);
  // index_queued as the shared indexing schedule calls it (search_plan.h).
  recall::IndexQueued batches();
  int64_t rows_with(const std::string& source, const std::string& chat, const std::string& term);
  // A search's plan (search_plan.h) over `source` in `chat` ("" : all rows), with the index's
  // row count and each planned term's document frequency.
  struct Planned {
    recall::QueryPlan plan;
    double total = 0;
    std::vector<int64_t> doc_rows;
  };
  Planned planned(const std::string& source, const std::string& chat,
                  const std::vector<std::string>& terms);
  // Scores `candidates` (their stored terms in `row_terms`) by BM25 with the matched rows'
  // average length, best first, at most `limit`.
  static void rank(std::vector<recall::Candidate>& candidates,
                   const std::vector<std::string>& row_terms, const Planned& p, int limit);
  void check_deadline() const;
  // Whether the turn's catch-up found any document indexed or queued; read (and
  // forgotten) by the next search_documents, which skips its statements when none was.
  std::optional<bool> documents_found_;
  // Folds up to kFoldBatch buffered overall-count deltas into search_term_rows unless another
  // connection is folding; true when it folded a full batch (more may be waiting).
  bool fold_deltas();
  void fold_now_and_then();  // fold_deltas() at most every kFoldEvery in this process

  db::pg::Connection& c_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
};

// Messages from a result whose columns are id, role, text, created_at (storage.cpp).
std::vector<common::Message> pg_messages(const db::pg::Result& r);

}  // namespace autonous::store
