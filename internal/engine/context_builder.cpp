#include "internal/engine/context_builder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "internal/common/text.h"
#include "internal/common/utf8.h"
#include "internal/engine/allocator.h"
#include "internal/engine/assembler.h"
#include "internal/engine/compressor.h"
#include "internal/engine/level_compressor.h"
#include "internal/engine/provider.h"
#include "internal/engine/summary.h"
#include "internal/engine/token_budget.h"
#include "internal/tokens/token_counter.h"
#include "internal/tokens/truncate.h"

namespace autonous::engine {

Level next_level(Level level) noexcept {
  if (level == Level::kNone) return Level::kNormal;
  if (level == Level::kNormal) return Level::kAggressive;
  return Level::kEmergency;
}

ContextBuilder::ContextBuilder(ContextSettings settings, Provider& provider,
                               const Compressor& compressor, const Assembler& assembler,
                               const tokens::TokenCounter& counter, BuilderSeams seams)
    : settings_(std::move(settings)),
      provider_(provider),
      compressor_(compressor),
      assembler_(assembler),
      counter_(counter),
      store_(seams.summaries),
      summarizer_(seams.summarizer),
      searcher_(seams.searcher),
      embedder_(seams.embedder) {
  check_budget(settings_, counter_);
}

ResolvedChat ContextBuilder::resolve(const ChatState& state,
                                     std::optional<ContextWarning>& warning) const {
  ResolvedChat chat;
  chat.cleared_through = state.cleared_through;
  chat.policy = settings_.policy;
  try {
    // Most chats have no settings of their own: no JSON parse on that path.
    const ChatOverrides overrides =
        state.settings_json == "{}" ? ChatOverrides{} : parse_overrides(state.settings_json);
    if (!overrides.empty()) {
      ContextSettings own = settings_;
      own.policy = effective_policy(settings_, overrides);
      check_budget(own, counter_);
      chat.policy = own.policy;
      chat.own_settings = true;
    }
  } catch (const PolicyError& e) {
    // Bad stored settings never stop a turn.
    warning = ContextWarning{
        "bad_chat_settings",
        std::string("chat settings ignored, environment defaults used: ") + e.what()};
  }
  chat.requested_strategy = chat.policy.strategy;
  chat.strategy = chat.policy.strategy;
  return chat;
}

void ContextBuilder::begin(const std::string& chat_id, BuiltContext& out) const {
  ChatState stored = provider_.chat_state(chat_id);
  std::optional<ContextWarning> bad_settings;
  out.chat = resolve(stored, bad_settings);
  out.chat.pins = std::move(stored.pins);
  out.chat.blocks = std::move(stored.blocks);
  out.chat.custom = std::move(stored.custom);
  if (bad_settings) out.warnings.push_back(*bad_settings);
  if (out.chat.strategy == Strategy::kSummarize && store_ == nullptr) {
    out.chat.strategy = Strategy::kTokenBudget;
    out.warnings.push_back(
        {"summarize_unavailable",
         "the summarize strategy needs a summary store, which this engine has none of; "
         "token_budget used"});
  }
  // A state written before the chat's latest clear point belongs to the cleared context.
  ContextState state = stored.context;
  if (state.chain_start != stored.cleared_through)
    state = ContextState{.chain_start = stored.cleared_through,
                         .verbatim_after = stored.cleared_through};
  out.state.before = state;
  out.state.after = state;
}

// A chat whose newest row is older than where its state says the verbatim part starts had rows
// deleted and their ids given out again (history ids are not AUTOINCREMENT): its state and
// summary describe a conversation that is gone. The chat starts over from its clear point.
bool ContextBuilder::restart_if_rows_vanished(const std::string& chat_id, BuiltContext& out,
                                              int64_t after) const {
  if (after <= out.chat.cleared_through) return false;
  const std::vector<common::Message> newest =
      provider_.get_history(chat_id, 1, out.chat.cleared_through);
  if (!newest.empty() && newest.back().history_id >= after) return false;
  ContextState fresh{.chain_start = out.chat.cleared_through,
                     .verbatim_after = out.chat.cleared_through};
  if (store_ != nullptr) {
    const std::optional<Summary> stale = store_->latest(chat_id, out.chat.cleared_through);
    fresh.summary_from = stale ? stale->id + 1 : out.state.before.summary_from;
  }
  fresh.compactions = out.state.before.compactions;
  out.state.before = fresh;
  out.state.after = fresh;
  out.state.reset = true;  // stored even without a compaction
  out.warnings.push_back(
      {"state_reset",
       fmt::format("the chat's newest history id {} is below where its context state starts ({}): "
                   "rows were deleted and ids reused; its state and summary are set aside",
                   newest.empty() ? 0 : newest.back().history_id, after)});
  return true;
}

ContextBuilder::Verbatim ContextBuilder::read_verbatim(const std::string& chat_id,
                                                       BuiltContext& out, const Ends& ends,
                                                       const Marks& marks) const {
  Verbatim v = read_from(chat_id, out, ends, marks);
  if (v.rows.messages.empty() && restart_if_rows_vanished(chat_id, out, v.after))
    v = read_from(chat_id, out, ends, marks);
  return v;
}

ContextBuilder::Verbatim ContextBuilder::read_from(const std::string& chat_id,
                                                   const BuiltContext& out, const Ends& ends,
                                                   const Marks& marks) const {
  Verbatim v;
  v.after = std::max(out.chat.cleared_through, out.state.before.verbatim_after);
  if (out.chat.strategy == Strategy::kSummarize && settings_.layout != Layout::kMinimal) {
    v.summary = store_->latest(chat_id, out.chat.cleared_through);
    if (v.summary && v.summary->id < out.state.before.summary_from) v.summary.reset();
    if (v.summary) {
      v.after = std::max(v.after, v.summary->covers_through);
      int64_t cut = 0;  // an older binary's summary kept whole: bounded here as in the next fold
      v.summary->text = bounded_summary(
          std::move(v.summary->text),
          kStoredSummaryFactor * std::max<int64_t>(settings_.summary.max_tokens, 1), counter_, cut);
      v.summary_tokens = summary_block_tokens(v.summary->text, counter_);
    }
  }
  v.older = v.after > out.chat.cleared_through;
  const int limit =
      settings_.history_window > 0 && settings_.layout != Layout::kMinimal ? read_limit(marks) : 0;
  if (ends.user_truncated || limit <= 0) return v;
  std::vector<common::Message> rows = provider_.get_history(chat_id, limit, v.after);
  v.full = static_cast<int>(rows.size()) == limit;
  const int64_t message_cap =
      settings_.max_chars_per_message > 0 ? 0 : ends.budget_tokens / kMessageShareDivisor;
  for (auto& m : rows) common::defuse_block_tags(m.content);
  v.rows = prepare(std::move(rows), settings_.max_chars_per_message, message_cap, counter_);
  return v;
}

int64_t ContextBuilder::cut_limit(int64_t cut_through, CompactionReason last_reason) noexcept {
  const bool budget_bound =
      last_reason == CompactionReason::kThreshold || last_reason == CompactionReason::kOverflow;
  return budget_bound ? std::numeric_limits<int64_t>::max() : cut_through;
}

Cut ContextBuilder::plan(const Verbatim& v, const Ends& ends, int64_t evidence, const Marks& marks,
                         const BuildOptions& options, bool will_fold,
                         const BuiltContext& out) const {
  const ContextPolicy& policy = out.chat.policy;
  CutInput in;
  in.messages = v.rows.messages;
  in.cost = v.rows.cost;
  // What each message will cost in the prompt: the normal level cuts an oversized one to its cap
  // (#28: planned with the uncut sizes, a chat with large messages kept only the floor).
  std::vector<int64_t> carried(v.rows.cost.begin(), v.rows.cost.end());
  const int64_t cap = oversized_tokens(ends.budget_tokens);
  for (int64_t& c : carried) c = std::min(c, cap);
  in.carried = carried;
  // The trigger is judged with what the prompt carries now (cut_limit()); the cut with what it
  // will carry after this compaction (every oversized message cut).
  const int64_t limit = cut_limit(out.state.before.cut_through, out.state.before.last_reason);
  std::vector<int64_t> now(v.rows.cost.begin(), v.rows.cost.end());
  for (size_t i = 0; i < now.size(); ++i)
    if (v.rows.messages[i].history_id <= limit) now[i] = carried[i];
  in.trigger = now;
  in.fixed_tokens = ends.fixed_tokens + v.summary_tokens;
  in.budget_tokens = ends.budget_tokens;
  in.thresholds = policy.thresholds;
  in.marks = marks;
  in.overflow = options.min_level > Level::kNone;
  // The prompt lands on the target (CONTEXT_TARGET, the compaction's depth) with the evidence
  // it carries: the history gets the target less the ends, the summary and that evidence.
  const auto at_target = static_cast<int64_t>(
      std::floor(policy.thresholds.target * static_cast<double>(ends.budget_tokens)));
  // A fold replaces the summary: room for a full-size new one, and the tail it keeps within
  // KEEP_RECENT_TOKENS (a quarter of the budget when unset).
  in.goal_tokens =
      std::max<int64_t>(at_target - ends.fixed_tokens - summary_room(v, will_fold) - evidence, 0);
  if (will_fold) {
    const int64_t keep = settings_.summary.keep_recent_tokens > 0
                             ? settings_.summary.keep_recent_tokens
                             : (ends.budget_tokens - evidence) / 4;
    in.goal_tokens = std::min(in.goal_tokens, keep);
  }
  return plan_cut(in);
}

void ContextBuilder::fold(const std::string& chat_id, Verbatim& v, Cut& cut,
                          const BuildOptions& options, BuiltContext& out) const {
  ContextState& state = out.state.after;
  std::vector<common::Message> leaving(v.rows.messages.begin(),
                                       v.rows.messages.begin() + static_cast<ptrdiff_t>(cut.first));
  if (options.dry_run || summarizer_ == nullptr) {
    out.summary.pending = static_cast<int64_t>(leaving.size());
    return;
  }
  if (state.summary_skips > 0) {
    --state.summary_skips;
    out.warnings.push_back(
        {"summary_backoff",
         fmt::format("after {} failed summaries, this compaction drops {} message(s) instead of "
                     "summarizing them; {} more compaction(s) will",
                     state.summary_failures, leaving.size(), state.summary_skips)});
    return;
  }
  const int64_t unread =
      v.full ? store_->count_between(chat_id, v.after, v.rows.messages.front().history_id) : 0;
  const SummaryCompactor compactor(settings_, *store_, *summarizer_, counter_);
  Fold f = compactor.fold({chat_id, out.chat.cleared_through, v.summary, std::move(leaving)});
  f.outcome.skipped += unread;
  const bool stored = f.stored.has_value();
  if (stored) {
    v.summary = std::move(f.stored);
    v.summary_tokens = v.summary->tokens;
  }
  // What was not folded (a failure, or more than kMaxFoldCalls calls take) stays verbatim when
  // the turn read everything since the last compaction: nothing lost, the next compaction goes
  // on. Past the window it is dropped (counted as skipped): the read would slide every turn.
  if (f.unfolded > 0 && !v.full) {
    size_t kept_from = 0;
    if (stored)
      while (kept_from < cut.first &&
             v.rows.messages[kept_from].history_id <= v.summary->covers_through)
        ++kept_from;
    cut.first = user_start(v.rows.messages, kept_from);
    // A reply the fold stopped before leaves with the user message it answered folded.
    if (stored) f.outcome.skipped += static_cast<int64_t>(cut.first - kept_from);
  } else {
    f.outcome.skipped += f.unfolded;
  }
  if (stored) out.summarized = std::move(f.outcome);
  if (!f.error) {
    state.summary_failures = 0;
    return;
  }
  // Back off: after f consecutive failures the next 2^(f-1) - 1 compactions (at most 15) drop
  // instead of calling.
  ++state.summary_failures;
  state.summary_skips = (int64_t{1} << std::min<int64_t>(state.summary_failures - 1, 4)) - 1;
  out.warnings.push_back(
      {"summary_failed",
       fmt::format("{} (failure {} in a row; the next {} compaction(s) will not summarize)",
                   *f.error, state.summary_failures, state.summary_skips)});
}

Compression ContextBuilder::compress(Prepared kept, const Ends& ends, int64_t summary_tokens,
                                     int64_t cut_through, BuiltContext& out) const {
  Figures& f = out.figures;
  const ContextPolicy& policy = out.chat.policy;
  TokenBudget budget;
  budget.max_tokens = std::max<int64_t>(ends.history_budget_tokens - summary_tokens, 0);
  budget.fixed_tokens = ends.fixed_tokens + summary_tokens;
  // The plan already compacted. The oversized messages a compaction kept (up to `cut_through`)
  // are carried cut, whatever the usage; newer ones whole until the next compaction: what is cut
  // changes only at a compaction, so the prompt only grows at its end between them (#28: cutting
  // from soft on cut messages already sent, a second prefix break in every cycle). Over the
  // budget the last resort cuts every oversized message and drops.
  budget.thresholds = Thresholds{1.0, 1.0, 1.0, policy.thresholds.target};
  budget.min_level = cut_through > 0 ? Level::kNormal : Level::kNone;
  budget.stable_cuts = true;
  budget.cut_through = cut_through;
  Compression c = compressor_.compress_prepared(std::move(kept), budget);
  f.truncated_count = c.truncated_count;
  f.cut_messages = c.cut_count;
  // Normal is reported when it cut something (it applies on every turn after a compaction).
  if (c.cut_count > 0 || c.level > Level::kNormal) f.level = std::max(f.level, c.level);
  f.rounds = std::max(f.rounds, c.rounds);
  f.hard_truncated = c.hard_truncated;
  if (f.user_truncated) {  // the last resort ran
    f.level = Level::kEmergency;
    f.rounds = std::max(f.rounds, 1);
  }
  return c;
}

void ContextBuilder::record_state(const std::string& chat_id, const Verbatim& v, size_t first,
                                  const BuildOptions& options, BuiltContext& out) const {
  ContextState& after = out.state.after;
  const std::vector<common::Message>& rows = v.rows.messages;
  // A compaction moves the start of the verbatim part, the cut mark or both (the prefix breaks
  // either way).
  if (first > 0 || after.cut_through != out.state.before.cut_through) {
    if (first > 0)
      after.verbatim_after =
          first < rows.size() ? rows[first].history_id - 1 : rows.back().history_id;
    after.verbatim_after = std::max(after.verbatim_after, out.state.before.verbatim_after);
    if (out.state.compaction == CompactionReason::kNone)
      out.state.compaction = CompactionReason::kThreshold;
    ++after.compactions;
    after.last_reason = out.state.compaction;
  } else {
    out.state.compaction = CompactionReason::kNone;
  }
  if (!options.dry_run && !options.defer_commit) commit(chat_id, out);
}

void ContextBuilder::commit(const std::string& chat_id, const BuiltContext& built) const {
  if (state_changed(built)) provider_.save_context_state(chat_id, built.state.after);
}

// The cut mark moves to the newest message with a compaction that moved the start, and with one
// for tokens that cutting alone meets (the plan counted the kept messages cut) unless every
// oversized message is cut already; a window compaction whose fold failed and kept everything
// changes nothing.
Compression ContextBuilder::fit(const Verbatim& v, const Cut& cut, const Ends& ends,
                                BuiltContext& out) const {
  constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  const int64_t newest = v.rows.messages.empty() ? 0 : v.rows.messages.back().history_id;
  const bool for_tokens =
      cut.reason == CompactionReason::kThreshold || cut.reason == CompactionReason::kOverflow;
  const bool moves = cut.first > 0 || for_tokens;
  int64_t cut_through = out.state.before.cut_through;
  if (cut.first > 0 || (for_tokens && cut_limit(cut_through, out.state.before.last_reason) != kAll))
    cut_through = std::max(cut_through, newest);
  int64_t limit = cut_limit(cut_through, moves ? cut.reason : out.state.before.last_reason);
  const Figures figures = out.figures;
  Compression c = compress(tail(v.rows, cut.first), ends, out.summary.tokens, limit, out);
  const bool retry = c.level > Level::kNormal && limit != kAll;
  if (retry) {
    // Over the budget with newer messages whole: cutting every oversized one comes before the
    // last resort's drop (#28 review: a 90k paste and a 25k reply lost all history).
    out.figures = figures;
    limit = kAll;
    c = compress(tail(v.rows, cut.first), ends, out.summary.tokens, limit, out);
  }
  // The last resort cut every oversized message: the mark follows, so the next turns carry the
  // same (a compaction, recorded as one).
  if (c.level > Level::kNormal || retry) cut_through = std::max(cut_through, newest);
  out.state.after.cut_through = cut_through;
  return c;
}

BuiltContext ContextBuilder::build(const std::string& chat_id, const std::string& user_text,
                                   const BuildOptions& options) const {
  const auto started = std::chrono::steady_clock::now();
  BuiltContext out;
  Figures& f = out.figures;
  f.counter = std::string(counter_.name());
  begin(chat_id, out);
  const ContextPolicy& policy = out.chat.policy;
  Ends ends = fit_ends(settings_, out.chat, user_text, options, counter_);
  out.pins_left_out = ends.pins_left_out;
  if (ends.pins_left_out > 0)
    out.warnings.push_back(
        {"pins_left_out",
         fmt::format("{} of {} pinned fact(s) left out: they exceed {} tokens ({} of the budget)",
                     ends.pins_left_out, out.chat.pins.size(), ends.pins_max_tokens,
                     kPinnedShare)});
  f.budget_tokens = ends.budget_tokens;
  f.system_tokens = ends.system_tokens;
  f.user_tokens = ends.user_tokens;
  f.user_truncated = ends.user_truncated;
  f.history_budget_tokens = ends.history_budget_tokens;
  out.state.budget_cap = options.budget_cap;

  const Marks marks = count_marks(settings_, policy);
  Verbatim v = read_verbatim(chat_id, out, ends, marks);
  const bool summarize = out.chat.strategy == Strategy::kSummarize;
  const bool will_fold = summarize && out.state.before.summary_skips == 0;
  // The allocator, evidence first: a compaction lands on the target with the evidence recall
  // finds for the prompt it plans. It plans with the reserve (allocator.h), asks recall what it
  // finds below the planned cut, and plans again with that: no room is kept for evidence that
  // never comes (#28: a compaction at 2 000 tokens filled 0.40 with recall on, 0.60 off).
  // Between compactions the verbatim part grows into whatever evidence leaves, until warn.
  out.evidence_reserve = allocate(v, ends, will_fold, summarize);
  Cut cut = plan(v, ends, out.evidence_reserve, marks, options, will_fold, out);
  if (cut.first > 0 && out.evidence_reserve > 0) {
    const int64_t found = probe_evidence(chat_id, v, cut.first, ends, out);
    if (found < out.evidence_reserve) {
      out.evidence_reserve = found;
      cut = plan(v, ends, found, marks, options, will_fold, out);
    }
  }
  out.state.compaction = cut.reason;
  f.original_count = static_cast<int64_t>(v.rows.messages.size());
  f.tokens_before = ends.fixed_tokens + v.summary_tokens + v.rows.tokens;
  if (cut.first > 0) {
    f.level = std::max(cut.level, Level::kAggressive);
    f.rounds = 1;
  }
  if (summarize && cut.first > 0) fold(chat_id, v, cut, options, out);
  take_summary(v, out);

  // The fit uses the whole budget: the reserve steers compactions, it never drops history that a
  // compaction could not move (a failed summary keeps its messages verbatim).
  Compression c = fit(v, cut, ends, out);
  // What the compressor's last resort dropped leaves the verbatim part too. Kept history starts
  // on a user message: a leading reply is left out (every turn alike, so no state changes).
  const size_t first = cut.first + static_cast<size_t>(c.dropped_count);
  const size_t lead = user_start(c.messages, 0);
  int64_t history_tokens = c.tokens;
  for (size_t i = 0; i < lead; ++i) history_tokens -= counter_.count_message(c.messages[i]);
  c.messages.erase(c.messages.begin(), c.messages.begin() + static_cast<ptrdiff_t>(lead));
  f.compressed_count = static_cast<int64_t>(c.messages.size());
  f.dropped_count = static_cast<int64_t>(first + lead);
  record_state(chat_id, v, first, options, out);

  finish(chat_id, v, std::move(c.messages), history_tokens, ends, out);
  f.build_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
}

}  // namespace autonous::engine
