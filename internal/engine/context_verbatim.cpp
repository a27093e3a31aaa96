#include "internal/engine/context_verbatim.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "internal/common/text.h"
#include "internal/engine/summary_compactor.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine {
namespace {

// Each row's stored count goes to the counter (a lookup from then on); a row without one, when
// the counter's counts are stored, is counted here and listed in `counted` for write_state.
void count_once(const tokens::TokenCounter& counter, const std::vector<common::Message>& rows,
                const std::vector<int64_t>& stored, std::vector<TokenCount>& counted) {
  if (counter.stored_name().empty()) return;
  for (size_t i = 0; i < rows.size(); ++i) {
    const common::Message& m = rows[i];
    if (i < stored.size() && stored[i] >= 0)
      counter.remember(m.content, stored[i]);
    else if (m.history_id > 0)
      counted.push_back({m.history_id, counter.count_text(m.content), m.content});
  }
}

Verbatim read_from(const VerbatimSource& src, const std::string& chat_id, const ResolvedChat& chat,
                   const ContextState& state, const Ends& ends, const Marks& marks) {
  const ContextSettings& settings = src.settings;
  Verbatim v;
  v.after = std::max(chat.cleared_through, state.verbatim_after);
  if (chat.strategy == Strategy::kSummarize && settings.layout != Layout::kMinimal &&
      src.summaries != nullptr) {
    v.summary = src.summaries->latest(chat_id, chat.cleared_through);
    if (v.summary && v.summary->id < state.summary_from) v.summary.reset();
    if (v.summary) {
      v.after = std::max(v.after, v.summary->covers_through);
      int64_t cut = 0;  // an older binary's summary kept whole: bounded here as in the next fold
      v.summary->text =
          bounded_summary(std::move(v.summary->text),
                          kStoredSummaryFactor * std::max<int64_t>(settings.summary.max_tokens, 1),
                          src.counter, cut);
      v.summary_tokens = summary_block_tokens(v.summary->text, src.counter);
    }
  }
  v.older = v.after > chat.cleared_through;
  const int limit =
      settings.history_window > 0 && settings.layout != Layout::kMinimal ? read_limit(marks) : 0;
  if (ends.user_truncated || limit <= 0) return v;
  std::vector<int64_t> stored;
  std::vector<common::Message> rows =
      src.provider.read_history(chat_id, limit, v.after, src.counter.stored_name(), stored);
  v.full = static_cast<int>(rows.size()) == limit;
  const int64_t first_read = rows.empty() ? 0 : rows.front().history_id;  // ids start at 1
  count_once(src.counter, rows, stored, v.counted);
  const int64_t message_cap =
      settings.max_chars_per_message > 0 ? 0 : ends.budget_tokens / kMessageShareDivisor;
  for (auto& m : rows) common::defuse_block_tags(m.content);
  v.rows = prepare(std::move(rows), settings.max_chars_per_message, message_cap, src.counter,
                   ends.tools_offered);
  // Whole unless rows were left unread, or prepare() left some read out (a tool row whose call
  // is gone): those are below the prompt and only a search finds them.
  v.whole = !v.full && !v.older &&
            (v.rows.messages.empty() ? first_read == 0
                                     : first_read == v.rows.messages.front().history_id);
  return v;
}

// A chat whose newest row is older than where its state says the verbatim part starts had rows
// deleted and their ids given out again (history ids are not AUTOINCREMENT): its state and
// summary describe a conversation that is gone. The chat starts over from its clear point.
bool restart_if_rows_vanished(const VerbatimSource& src, const std::string& chat_id,
                              const ResolvedChat& chat, const ContextState& state, int64_t after,
                              VerbatimRead& out) {
  if (after <= chat.cleared_through) return false;
  const std::vector<common::Message> newest =
      src.provider.get_history(chat_id, 1, chat.cleared_through);
  if (!newest.empty() && newest.back().history_id >= after) return false;
  ContextState fresh{.chain_start = chat.cleared_through, .verbatim_after = chat.cleared_through};
  fresh.summary_from = state.summary_from;  // never lowered: a set-aside summary stays aside
  if (src.summaries != nullptr) {
    const std::optional<Summary> stale = src.summaries->latest(chat_id, chat.cleared_through);
    fresh.summary_from = stale ? stale->id + 1 : state.summary_from;
  }
  fresh.compactions = state.compactions;
  out.restarted = fresh;
  out.warning = ContextWarning{
      "state_reset",
      fmt::format("the chat's newest history id {} is below where its context state starts ({}): "
                  "rows were deleted and ids reused; its state and summary are set aside",
                  newest.empty() ? 0 : newest.back().history_id, after)};
  return true;
}

}  // namespace

VerbatimRead read_verbatim(const VerbatimSource& source, const std::string& chat_id,
                           const ResolvedChat& chat, const ContextState& state, const Ends& ends,
                           const Marks& marks) {
  VerbatimRead out;
  out.verbatim = read_from(source, chat_id, chat, state, ends, marks);
  if (out.verbatim.rows.messages.empty() &&
      restart_if_rows_vanished(source, chat_id, chat, state, out.verbatim.after, out))
    out.verbatim = read_from(source, chat_id, chat, *out.restarted, ends, marks);
  return out;
}

Prepared rows_from(const Prepared& rows, size_t first) {
  Prepared kept = rows;
  const auto n = static_cast<ptrdiff_t>(first);
  kept.messages.erase(kept.messages.begin(), kept.messages.begin() + n);
  kept.cost.erase(kept.cost.begin(), kept.cost.begin() + n);
  kept.cut.erase(kept.cut.begin(), kept.cut.begin() + n);
  kept.tokens = 0;
  for (const int64_t c : kept.cost) kept.tokens += c;
  return kept;
}

}  // namespace autonous::engine
