#include "internal/engine/context_fit.h"

#include <algorithm>
#include <limits>

#include "internal/engine/context_cut.h"
#include "internal/engine/token_budget.h"

namespace autonous::engine {
namespace {

Compression compress(const Compressor& compressor, Prepared kept, const Ends& ends,
                     int64_t summary_tokens, int64_t cut_through, int64_t clear_through,
                     double target) {
  TokenBudget budget;
  budget.max_tokens = std::max<int64_t>(ends.history_budget_tokens - summary_tokens, 0);
  budget.fixed_tokens = ends.fixed_tokens + summary_tokens;
  // The plan already compacted: no level turns on by usage. The oversized messages up to
  // `cut_through` are carried cut; over the budget the last resort cuts every one and drops.
  budget.thresholds = Thresholds{1.0, 1.0, 1.0, target};
  budget.min_level = cut_through > 0 ? Level::kNormal : Level::kNone;
  budget.stable_cuts = true;
  budget.cut_through = cut_through;
  budget.clear_through = clear_through;
  return compressor.compress_prepared(std::move(kept), budget);
}

}  // namespace

Fitted fit_history(const Compressor& compressor, const Verbatim& v, const Cut& cut,
                   const Ends& ends, int64_t summary_tokens, const ContextState& before,
                   double target) {
  constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  const int64_t newest = v.rows.messages.empty() ? 0 : v.rows.messages.back().history_id;
  const bool for_tokens =
      cut.reason == CompactionReason::kThreshold || cut.reason == CompactionReason::kOverflow;
  const bool moves = cut.first > 0 || for_tokens;
  Fitted out;
  out.cut_through = before.cut_through;
  // Every compaction the plan makes moves the mark: for the cuts (unless every oversized message
  // is cut already) and for old tool results (tool_results.h), which are cleared only up to it.
  if (moves) out.cut_through = std::max(out.cut_through, newest);
  int64_t limit = cut_limit(out.cut_through, moves ? cut.reason : before.last_reason);
  // Old tool results are cleared up to the mark itself (tool_results.h), never "every one".
  out.compression = compress(compressor, rows_from(v.rows, cut.first), ends, summary_tokens, limit,
                             out.cut_through, target);
  const bool retry = out.compression.level > Level::kNormal && limit != kAll;
  if (retry)  // cutting every oversized message comes before the last resort's drop (#28 review:
              // a 90k paste and a 25k reply lost all history)
    out.compression = compress(compressor, rows_from(v.rows, cut.first), ends, summary_tokens, kAll,
                               newest, target);
  // The last resort cut every oversized message: the mark follows, so the next turns carry the
  // same (a compaction, recorded as one).
  if (out.compression.level > Level::kNormal || retry)
    out.cut_through = std::max(out.cut_through, newest);
  return out;
}

}  // namespace autonous::engine
