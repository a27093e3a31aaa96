#include "internal/engine/context_fold.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "internal/engine/summary_compactor.h"

namespace autonous::engine {

FoldStep fold_leaving(const FoldSeams& seams, const std::string& chat_id, int64_t cleared_through,
                      const Verbatim& v, const Cut& cut, const ContextState& state, bool dry_run) {
  FoldStep out;
  out.first = cut.first;
  out.summary_failures = state.summary_failures;
  out.summary_skips = state.summary_skips;
  std::vector<common::Message> leaving(v.rows.messages.begin(),
                                       v.rows.messages.begin() + static_cast<ptrdiff_t>(cut.first));
  if (dry_run || seams.summarizer == nullptr) {
    out.pending = static_cast<int64_t>(leaving.size());
    return out;
  }
  if (out.summary_skips > 0) {
    --out.summary_skips;
    out.warnings.push_back(
        {"summary_backoff",
         fmt::format("after {} failed summaries, this compaction drops {} message(s) instead of "
                     "summarizing them; {} more compaction(s) will",
                     out.summary_failures, leaving.size(), out.summary_skips)});
    return out;
  }
  const int64_t unread =
      v.full ? seams.summaries.count_between(chat_id, v.after, v.rows.messages.front().history_id)
             : 0;
  const SummaryCompactor compactor(seams.settings, seams.summaries, *seams.summarizer,
                                   seams.counter);
  Fold f = compactor.fold({chat_id, cleared_through, v.summary, std::move(leaving)});
  f.outcome.skipped += unread;
  const bool stored = f.stored.has_value();
  // What was not folded (a failure, or more than kMaxFoldCalls calls take) stays verbatim when
  // the turn read everything since the last compaction: nothing lost, the next compaction goes
  // on. Past the window it is dropped (counted as skipped): the read would slide every turn.
  if (f.unfolded > 0 && !v.full) {
    size_t kept_from = 0;
    if (stored)
      while (kept_from < cut.first &&
             v.rows.messages[kept_from].history_id <= f.stored->covers_through)
        ++kept_from;
    out.first = user_start(v.rows.messages, kept_from);
    // A reply the fold stopped before leaves with the user message it answered folded.
    if (stored) f.outcome.skipped += static_cast<int64_t>(out.first - kept_from);
  } else {
    f.outcome.skipped += f.unfolded;
  }
  if (stored) {
    out.summary = std::move(f.stored);
    out.summarized = std::move(f.outcome);
  }
  if (!f.error) {
    out.summary_failures = 0;
    return out;
  }
  ++out.summary_failures;
  out.summary_skips = (int64_t{1} << std::min<int64_t>(out.summary_failures - 1, 4)) - 1;
  out.warnings.push_back(
      {"summary_failed",
       fmt::format("{} (failure {} in a row; the next {} compaction(s) will not summarize)",
                   *f.error, out.summary_failures, out.summary_skips)});
  return out;
}

}  // namespace autonous::engine
