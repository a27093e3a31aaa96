#pragma once
// What recall's search index does the same on every backend (backend/sqlite/search_index.h on
// SQLite FTS5, backend/postgres/search.h on PostgreSQL): the limits below, the chat token, term
// counting, the indexing schedule (index_within, index_all) and plan_query, which of a question's
// search terms a search uses. It keeps the kMaxQueryTerms rarest terms that occur at all and drops
// those in more than kCommonShare of the searched rows (they tell nothing apart and make the search
// slow); when every term is common, the rarest two may be searched together (both in one row). The
// IDF is FTS5's BM25 IDF, floored as it floors it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace autonous::recall {

inline constexpr int kMaxQueryTerms = 8;
// Distinct terms of a question looked up at most (each lookup is one index probe).
inline constexpr size_t kMaxLookups = 64;
inline constexpr double kCommonShare = 0.1;
// Below this many indexed rows no term counts as common (a short chat's every word is frequent).
inline constexpr double kMinRowsForCommon = 50;
// ... and a term in more rows than this is common whatever the share (its count and its ranking
// would cost as much as its doclist: the search stays fast at a million rows).
inline constexpr int64_t kMaxTermRows = 800;
// The query's terms together match at most this many rows (rarest terms first).
inline constexpr int64_t kMaxPostings = 800;
// When every term is common, the rarest two, when each is in at most this many rows, are
// searched together (both in one message).
inline constexpr int64_t kMaxAndTermRows = 10000;
// A chat with more indexed rows than this is searched without its chat token (search_history).
inline constexpr int64_t kBigChatRows = 20000;
// When the query's terms match at most this many rows of other chats, the search takes that many
// more winners and drops the others' rows as it reads them, instead of checking each match's
// chat (search_history).
inline constexpr int64_t kMaxForeignRows = 100;
// The vector search scans at most this many of a chat's newest vectors in range.
inline constexpr int kMaxVectorRows = 10000;
// A turn's indexing of its chat's backlog before the search, at most (batches of 250 rows).
inline constexpr std::chrono::milliseconds kCatchUpBudget{100};

// Queued rows indexed per transaction: by `autonous migrate` and the worker's start (kBatch), under
// a time budget (kTimedBatch: a turn's catch-up, an idle worker), and inside a turn's own
// transaction (kInTransactionRows: the turn's pair and a few rows more, the rows a front end queued
// in the chat meanwhile; on PostgreSQL a completion without tool steps indexes its pair in its
// own statement, so this is only the chat's other queued rows; the reply's write lock is held
// meanwhile).
inline constexpr int kBatch = 2000;
inline constexpr int kTimedBatch = 250;
inline constexpr int kInTransactionRows = 16;

// The `chat` column's token for `chat_id`: 'c' and 16 hex digits of an FNV-1a-style 64-bit hash
// (FNV's prime; its offset basis is 1469598103934665603, the standard one less its last digit).
// Every stored index holds these tokens: the hash must never change.
std::string chat_token(const std::string& chat_id);
// The `chat` token of a document for every chat (its chat_id is NULL).
inline constexpr const char* kEveryChatToken = "call";
// The chat token of a queued row: its chat's, or kEveryChatToken for a document of every chat.
inline std::string row_chat_token(const std::optional<std::string>& chat_id) {
  return chat_id ? chat_token(*chat_id) : std::string(kEveryChatToken);
}
// The terms table of a source ("history" or "document"), the same name on every backend.
inline std::string terms_table(const std::string& source) {
  return source == "history" ? "history_terms" : "document_terms";
}

// (chat token or "", term or "") -> rows: a batch's change to the term counts.
using TermCounts = std::map<std::pair<std::string, std::string>, int64_t>;

// Adds `sign` to the counts of one row of `chat` (its token) whose space-separated search terms
// are `terms`: each distinct term over all chats ("") and in its chat, its chat's row count
// (term "") and the source's (chat "", term "").
void count_terms(const std::string& chat, const std::string& terms, int64_t sign,
                 TermCounts& counts);

// Indexes up to `limit` queued rows of `source` ("history" or "document"; of `chat_id` when
// given); with `until`, stops after the row that passes it. Returns how many.
using IndexQueued =
    std::function<int64_t(const std::string& source, const std::optional<std::string>& chat_id,
                          int limit, std::optional<std::chrono::steady_clock::time_point> until)>;

// The chat's queued rows (any chat's without `chat_id`), then the queued documents, in batches of
// kTimedBatch, until `until` has passed. Returns how many rows were indexed.
int64_t index_within(const IndexQueued& index_queued, const std::optional<std::string>& chat_id,
                     std::chrono::steady_clock::time_point until);

// Every queued row, history then documents, in batches of kBatch. Returns how many.
int64_t index_all(const IndexQueued& index_queued);

struct QueryPlan {
  std::vector<std::string> terms;  // rarest first
  std::vector<int64_t> rows;       // each term's rows in the searched part (the relevance gate)
  double searched = 0;             // rows of the searched part
  bool all = false;                // true: rows holding every term; false: any term
  double idf = 0;                  // Σ IDF of `terms`
  int64_t foreign = 0;             // rows of other chats the terms match, at most
};

// How many indexed rows in `chat` ("": all chats) hold `term` ("": every row of `chat`).
using RowsWith = std::function<int64_t(const std::string& chat, const std::string& term)>;

// The plan for `terms` searched in `chat` (its token; "" for every row) of an index of
// `total` rows.
QueryPlan plan_query(const std::vector<std::string>& terms, double total, const std::string& chat,
                     const RowsWith& rows_with);

// Okapi BM25 (k1 1.2, b 0.75, as FTS5) of one row whose space-separated terms are `row_terms`,
// for `plan`'s terms with their document frequencies `doc_rows`, in an index of `total` rows
// whose rows hold `avg_terms` terms on average. Higher is better.
double bm25(const std::string& row_terms, const std::vector<std::string>& terms,
            const std::vector<int64_t>& doc_rows, double total, double avg_terms);

}  // namespace autonous::recall
