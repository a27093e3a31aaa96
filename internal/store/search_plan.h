#pragma once
// plan_query: which of a question's search terms a search uses, for either backend's index
// (search_index.h on SQLite FTS5, pg_search.h on PostgreSQL). It keeps the kMaxQueryTerms
// rarest terms that occur at all and drops those in more than kCommonShare of the searched rows
// (they tell nothing apart and make the search slow); when every term is common, the rarest two
// may be searched together (both in one row). The IDF is FTS5's BM25 IDF, floored as it floors it.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace autonous::store {

struct QueryPlan {
  std::vector<std::string> terms;  // rarest first
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

}  // namespace autonous::store
