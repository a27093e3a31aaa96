#include "internal/engine/context_cut.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "internal/engine/level_compressor.h"
#include "internal/engine/summary_compactor.h"
#include "internal/engine/tool_results.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine {
namespace {

constexpr int64_t kAll = std::numeric_limits<int64_t>::max();

// Each message's cost as carried when `clear` marks it cleared; its cost otherwise.
std::vector<int64_t> cleared_costs(std::span<const common::Message> messages,
                                   const std::vector<char>& clear, std::span<const int64_t> cost,
                                   const tokens::TokenCounter& counter) {
  std::vector<int64_t> out(cost.begin(), cost.end());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!clear[i]) continue;
    common::Message m = messages[i];
    clear_result(m);
    out[i] = std::min(out[i], counter.count_message(m));
  }
  return out;
}

}  // namespace

int64_t cut_limit(int64_t cut_through, CompactionReason last_reason) noexcept {
  const bool budget_bound =
      last_reason == CompactionReason::kThreshold || last_reason == CompactionReason::kOverflow;
  return budget_bound ? std::numeric_limits<int64_t>::max() : cut_through;
}

int64_t summary_room(const Verbatim& verbatim, bool will_fold, int64_t summary_max_tokens,
                     const tokens::TokenCounter& counter) {
  return will_fold ? std::max(verbatim.summary_tokens,
                              summary_block_tokens("", counter) + summary_max_tokens)
                   : verbatim.summary_tokens;
}

Cut plan_compaction(const Verbatim& v, const Ends& ends, const CompactionRequest& r,
                    const tokens::TokenCounter& counter) {
  CutInput in;
  in.messages = v.rows.messages;
  in.cost = v.rows.cost;
  // What each message will cost in the prompt: the normal level cuts an oversized one to its cap
  // (#28: planned with the uncut sizes, a chat with large messages kept only the floor).
  // Old tool results are carried cleared after it (tool_results.h: the mark moves to the newest).
  const std::vector<int64_t> stubs =
      cleared_costs(v.rows.messages, results_to_clear(v.rows.messages, kAll), v.rows.cost, counter);
  std::vector<int64_t> carried(v.rows.cost.begin(), v.rows.cost.end());
  const int64_t cap = oversized_tokens(ends.budget_tokens);
  for (size_t i = 0; i < carried.size(); ++i) carried[i] = std::min({carried[i], cap, stubs[i]});
  in.carried = carried;
  // The trigger is judged with what the prompt carries now; the cut with what it will carry.
  const int64_t limit = cut_limit(r.state.cut_through, r.state.last_reason);
  const std::vector<int64_t> cleared_now =
      cleared_costs(v.rows.messages, results_to_clear(v.rows.messages, r.state.cut_through),
                    v.rows.cost, counter);
  std::vector<int64_t> now(v.rows.cost.begin(), v.rows.cost.end());
  for (size_t i = 0; i < now.size(); ++i) {
    if (v.rows.messages[i].history_id <= limit) now[i] = std::min(now[i], cap);
    now[i] = std::min(now[i], cleared_now[i]);
  }
  in.trigger = now;
  in.fixed_tokens = ends.fixed_tokens + v.summary_tokens;
  in.budget_tokens = ends.budget_tokens;
  in.thresholds = r.thresholds;
  in.marks = r.marks;
  in.overflow = r.overflow;
  // The prompt lands on the target (CONTEXT_TARGET, the compaction's depth) with the evidence
  // it carries: the history gets the target less the ends, the summary and that evidence.
  const auto at_target = static_cast<int64_t>(
      std::floor(r.thresholds.target * static_cast<double>(ends.budget_tokens)));
  // A fold replaces the summary: room for a full-size new one, and the tail it keeps within
  // KEEP_RECENT_TOKENS (a quarter of the budget when unset).
  const int64_t room = summary_room(v, r.will_fold, r.summary.max_tokens, counter);
  in.goal_tokens = std::max<int64_t>(at_target - ends.fixed_tokens - room - r.evidence, 0);
  if (r.will_fold) {
    const int64_t keep = r.summary.keep_recent_tokens > 0 ? r.summary.keep_recent_tokens
                                                          : (ends.budget_tokens - r.evidence) / 4;
    in.goal_tokens = std::min(in.goal_tokens, keep);
  }
  return plan_cut(in);
}

}  // namespace autonous::engine
