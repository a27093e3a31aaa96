#pragma once
// Recall's selection: which of the full-text search's candidates become evidence. Pure.
//   gate       = a full-text match whose matched terms are not rare enough to be about the same
//                thing (kUncommonShare, kSpecificShare) is out: small talk recalls nothing;
//   relevance  = BM25 / the query's total IDF (what a one-occurrence match of every query term
//                in an average-length message scores), capped at 1; under min_relevance: out;
//   recency    = e^(−Δt/τ), Δt = the candidate's age relative to the newest message considered;
//   score      = relevance_weight × relevance + (1 − relevance_weight) × recency;
//   updates    = candidates matching the same query terms are versions of one fact: each gets
//                the best score of its group when it is the newest (the newer statement ranks
//                first), so an updated fact's new value is sent before the old one;
//   diversity  = MMR: greedily max λ × score − (1 − λ) × max Jaccard similarity (by search terms)
//                to what was already chosen, λ = kMmrLambda.
// Ties go to the newer message.
// With embeddings (EMBEDDING_MODEL), fuse() first merges the BM25 list and the vector list by
// reciprocal rank fusion: relevance = Σ 1/(kRrfK + rank) over the lists a candidate is in, over
// the best possible (first in both), so a candidate first in one list only has 0.5.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/message.h"

namespace autonous::recall {

inline constexpr double kMmrLambda = 0.7;
// The relevance gate (select_candidates): a full-text match needs a matched term in at most
// kUncommonShare of the searched rows (at least kMinUncommonRows), and its matched terms
// together in at most kSpecificShare of them (at least kMinSpecificRows): the rows expected to
// hold them all, were they independent, or the candidates that do, whichever is more.
inline constexpr double kUncommonShare = 0.02;
inline constexpr double kMinUncommonRows = 8;
inline constexpr double kSpecificShare = 0.005;
inline constexpr double kMinSpecificRows = 5;
inline constexpr double kRrfK = 60;

struct RecallSettings {
  bool enabled = true;            // RECALL
  int max_hits = 8;               // RECALL_MAX_HITS: hits chosen (neighbours come on top)
  int neighbours = 1;             // messages on each side of a hit sent with it
  int64_t max_tokens = 3000;      // RECALL_MAX_TOKENS: evidence at most (recalled + documents)
  int64_t message_tokens = 400;   // one recalled message or document at most (cut with a marker)
  double share = 0.45;            // RECALL_SHARE: of the flexible budget, reserved for evidence
  double min_relevance = 0.25;    // RECALL_MIN_RELEVANCE
  double relevance_weight = 0.7;  // 1 − RECALL_RECENCY_WEIGHT
  double recency_days = 30.0;     // RECALL_RECENCY_DAYS: τ
  int timeout_ms = 250;           // RECALL_TIMEOUT_MS: per gatherer
  // Vectors at least this similar (cosine) to the question are candidates
  // (EMBEDDING_MIN_SIMILARITY; only with EMBEDDING_MODEL).
  double min_similarity = 0.4;
};

// A full-text search hit.
struct Candidate {
  common::Message message;  // history_id: the row's id (a document's id for documents)
  double bm25 = 0;          // higher is better (FTS5's rank negated)
  bool document = false;
  std::string title;   // documents
  std::string source;  // documents
  std::string terms;   // its search terms, space-separated, when the index has them
  double cosine = 0;   // similarity to the question's vector (vector search)
  // Set by fuse(): the fused relevance and the candidate's rank in each list (0: not in it).
  std::optional<double> fused;
  int lexical_rank = 0;
  int semantic_rank = 0;
};

// What the search was asked, as it ran (the index drops terms too common to tell messages apart).
struct SearchResult {
  std::vector<Candidate> candidates;
  std::vector<std::string> terms;  // the query terms used
  double query_idf = 0;            // Σ IDF of `terms`
  // Each term's rows in the searched part, and that part's rows: what the relevance gate
  // judges a match by. Empty (a result built by hand): no gate.
  std::vector<int64_t> term_rows;
  double searched_rows = 0;
};

struct Scored {
  Candidate candidate;
  double relevance = 0;
  double recency = 0;
  double score = 0;
};

// `lexical` (BM25, best first) and `semantic` (vector search, best first) as one list by
// reciprocal rank fusion, best first: BM25 candidates under settings.min_relevance and vector
// candidates under settings.min_similarity are left out first. An empty `semantic` leaves
// `lexical` as it is. Keeps `lexical`'s terms and IDF.
SearchResult fuse(SearchResult lexical, const SearchResult& semantic,
                  const RecallSettings& settings);

// Seconds since the epoch of an ISO-8601 UTC time as SQLite writes it ("2026-03-04T10:12:00.123Z"
// or "2026-03-04 10:12:00"); nullopt when it is none.
std::optional<double> parse_time(const std::string& at);

// The chosen candidates, best first, at most settings.max_hits. `reference` is "now" for
// recency (seconds since the epoch); nullopt: the newest candidate's time.
std::vector<Scored> select_candidates(const SearchResult& result, std::optional<double> reference,
                                      const RecallSettings& settings);

}  // namespace autonous::recall
