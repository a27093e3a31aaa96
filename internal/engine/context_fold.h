#pragma once
// Summarize's fold (a step of ContextBuilder::build, on a compaction turn under summarize): the
// messages leaving at the cut are folded into the chat's summary (SummaryCompactor). A dry run
// (or no summarizer) only counts them; during a back-off the compaction drops them with a
// warning. After a failed call, what was not folded stays verbatim when the turn read everything
// since the last compaction (the cut moves back to it); past the read window it is dropped and
// counted as skipped. Failures back off: after f in a row the next 2^(f-1) - 1 compactions (at
// most 15) drop instead of calling. Returns what changed as a value; writes only the summary.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/engine/built_context.h"
#include "internal/engine/compaction.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/context_verbatim.h"
#include "internal/engine/provider.h"
#include "internal/engine/summary.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

struct FoldStep {
  size_t first = 0;                // where the verbatim part starts after the fold
  std::optional<Summary> summary;  // the new summary, when one was stored
  std::optional<SummaryOutcome> summarized;
  int64_t pending = 0;           // a dry run: the messages a compaction would fold in now
  int64_t summary_failures = 0;  // the back-off after this turn
  int64_t summary_skips = 0;
  std::vector<ContextWarning> warnings;
};

struct FoldSeams {
  SummaryStore& summaries;
  Summarizer* summarizer;  // nullptr: only count what would be folded (a dry run)
  const ContextSettings& settings;
  const tokens::TokenCounter& counter;
};

// Folds verbatim.rows.messages[0, cut.first) of `chat_id` (cleared through `cleared_through`)
// into the summary in use, with the back-off in `state`. Throws what the store throws.
FoldStep fold_leaving(const FoldSeams& seams, const std::string& chat_id, int64_t cleared_through,
                      const Verbatim& verbatim, const Cut& cut, const ContextState& state,
                      bool dry_run);

}  // namespace autonous::engine
