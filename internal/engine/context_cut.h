#pragma once
// Whether this turn compacts and where the verbatim part is cut (a step of ContextBuilder::build):
// the planner's input (compaction.h) composed from the verbatim part, the ends and the chat's
// state. The trigger is judged with the sizes the prompt carries now (the cut mark, cut_limit());
// the cut with the sizes it will carry after this compaction (every oversized message cut). The
// prompt lands on the target (CONTEXT_TARGET) with the evidence it carries; a fold also leaves
// room for a full-size new summary and keeps its tail within KEEP_RECENT_TOKENS. Pure.

#include <cstdint>

#include "internal/engine/compaction.h"
#include "internal/engine/context_ends.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/context_verbatim.h"
#include "internal/engine/policy.h"
#include "internal/engine/provider.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

struct CompactionRequest {
  Thresholds thresholds;  // the chat's policy's
  Marks marks;
  ContextState state;      // as this turn started (its cut mark, the last compaction's reason)
  int64_t evidence = 0;    // the tokens the compacted prompt keeps for evidence
  bool overflow = false;   // the provider refused the last prompt as too long
  bool will_fold = false;  // summarize folds what leaves into the summary
  SummarySettings summary;
};

Cut plan_compaction(const Verbatim& verbatim, const Ends& ends, const CompactionRequest& request,
                    const tokens::TokenCounter& counter);

// Up to which history id the prompt carries its oversized messages cut, between compactions:
// what the last compaction kept (`cut_through`); every one when that compaction was for tokens
// (threshold, overflow: the chat is bound by its budget, and a long message cut as it enters
// keeps the next compaction away); newer ones whole when it was for the message window (there is
// room). Both change only at a compaction, so the prompt only grows at its end.
int64_t cut_limit(int64_t cut_through, CompactionReason last_reason) noexcept;

// What the summary may take: a fold replaces it, so room for a full-size new one.
int64_t summary_room(const Verbatim& verbatim, bool will_fold, int64_t summary_max_tokens,
                     const tokens::TokenCounter& counter);

}  // namespace autonous::engine
