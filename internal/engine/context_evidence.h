#pragma once
// Recall's part of a turn (steps of ContextBuilder::build). Before the cut: the reserve a
// compaction keeps for evidence (allocator.h) and what recall would find below a planned cut
// (evidence first: a compaction sized to the evidence that comes). After the prompt is
// assembled: the evidence for the user's message, gathered into the room the prompt leaves and
// joined after the user's own text (before the layout's suffix), in the one message that changes
// every turn. With EMBEDDING_MODEL the question and the chat's new messages are embedded first,
// in one call (context_evidence_embeddings.cpp). Returns values; the searcher indexes and stores
// vectors.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/message.h"
#include "internal/engine/built_context.h"
#include "internal/engine/context_ends.h"
#include "internal/engine/context_prompt.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/context_verbatim.h"
#include "internal/recall/recall.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// Recall's seams: without a searcher (or with RECALL off) no evidence is gathered.
struct EvidenceSeams {
  recall::Searcher* searcher;
  recall::Embedder* embedder;  // nullptr: BM25 alone
  const ContextSettings& settings;
  const tokens::TokenCounter& counter;
  bool enabled() const noexcept { return searcher != nullptr && settings.recall.enabled; }
};

// The tokens a compaction keeps for evidence before recall is asked (allocator.h).
int64_t plan_reserve(const EvidenceSeams& seams, const Verbatim& verbatim, const Ends& ends,
                     bool will_fold, bool summarize);

// The id recall searches below when the prompt keeps the verbatim rows from the one with id
// `first_kept` on (nullopt: none kept): that id (past every row read when none was kept), or
// just past the clear point, an empty range that costs no search, when the prompt keeps all of
// the chat's history since it (Verbatim::whole, and no row dropped now). Most chats are short:
// their history search could only find nothing.
int64_t search_below(const Verbatim& verbatim, std::optional<int64_t> first_kept,
                     int64_t cleared_through);

// What the evidence for this turn's question would cost if the verbatim part started at
// verbatim.rows.messages[first]: recall run ahead of the cut, within `reserve`. The reserve
// itself when recall cannot be asked ahead (embeddings, whose question vector is one call a
// turn; a failing index); 0 without recall.
int64_t probe_evidence(const EvidenceSeams& seams, const std::string& chat_id,
                       int64_t cleared_through, const Verbatim& verbatim, size_t first,
                       const Ends& ends, int64_t reserve);

struct EvidenceStep {
  recall::Evidence evidence;  // what was joined into the prompt (tokens: exactly what it added)
  std::vector<ContextWarning> warnings;
};

// Gathers evidence for `ends.query` from below `before_id` (the first kept message) and joins it
// into `prompt` when the recount fits. Nothing when the user message was cut to fit.
EvidenceStep add_evidence(const EvidenceSeams& seams, const std::string& chat_id,
                          int64_t cleared_through, const std::vector<common::Message>& kept,
                          int64_t before_id, const Ends& ends, bool user_truncated, Prompt& prompt);

// Embeds the question (into `query`) and the chat's messages that have no vector yet, in one
// call; a failure leaves `query` without a vector and says so in `warnings`. Needs an embedder.
recall::GathererRun embed_question(const EvidenceSeams& seams, recall::RecallQuery& query,
                                   std::vector<ContextWarning>& warnings);

}  // namespace autonous::engine
