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
  // `c` must outlive the index; so must `pair_indexed` (see index_in_transaction), when given.
  explicit PgSearchIndex(db::pg::Connection& c, bool* pair_indexed = nullptr)
      : c_(c), pair_indexed_(pair_indexed) {}

  void catch_up(const std::string& chat_id) override;
  int64_t index_backlog(std::chrono::milliseconds budget);
  int64_t index_all();
  // A turn's completion: indexes up to kInTransactionRows queued rows of the chat, unless
  // `pair_indexed` is set (the completion's statement indexed its own rows, index_new_rows, and
  // saw nothing else of the chat queued); clears it.
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
  bool* pair_indexed_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
};

// A change to the term counts as statement parameters (array elements): the overall counts'
// deltas (chat "", to the write buffer: migrations/postgres/0010) and the chats' counts (updated
// in place: a chat's turns never run at once; an idle slot's backlog indexing of the same chat
// waits on the rows it shares with a turn, or the turn on it, for one statement).
struct CountChange {
  std::vector<std::optional<std::string>> overall_terms, overall_rows, chats, terms, rows;
  bool lowered = false;  // a chat's count went down: one that reached 0 goes, by its key
};
CountChange count_change(const recall::TermCounts& counts);

// New history rows of `chat_id` indexed by the statement that writes them (a turn's completion:
// queue_statements.cpp, complete_turn), so they skip search_queue (migrations/postgres/0024):
// the rows' chat token, each text's terms in order, and the counts they add.
struct NewRowsIndex {
  std::string chat;
  std::vector<std::string> terms;
  CountChange counts;
};
NewRowsIndex index_new_rows(const std::string& chat_id, const std::vector<std::string>& texts);

// Messages from a result whose columns are id, role, text, created_at (storage.cpp).
std::vector<common::Message> pg_messages(const db::pg::Result& r);

}  // namespace autonous::store
