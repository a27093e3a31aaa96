#include "internal/engine/context_builder.h"

#include <algorithm>

#include <fmt/format.h>

#include "internal/engine/allocator.h"
#include "internal/engine/context_blocks.h"
#include "internal/engine/context_chat.h"
#include "internal/engine/context_cut.h"
#include "internal/engine/context_fit.h"
#include "internal/engine/context_fold.h"
#include "internal/engine/context_prompt.h"
#include "internal/engine/provider.h"
#include "internal/tokens/token_counter.h"

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

void ContextBuilder::take_summary(const Verbatim& v, BuiltContext& out) {
  if (!v.summary) return;
  if (v.summary_tokens > out.figures.history_budget_tokens) {
    // MustFit first: a summary that does not fit this budget stays out of this prompt.
    out.warnings.push_back(
        {"summary_dropped",
         fmt::format("the summary ({} tokens) does not fit the budget", v.summary_tokens)});
    return;
  }
  out.summary.used = true;
  out.summary.id = v.summary->id;
  out.summary.tokens = v.summary_tokens;
  out.summary.pending = out.summarized ? 0 : out.summary.pending;
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

void ContextBuilder::finish(const std::string& chat_id, const Verbatim& v,
                            std::vector<common::Message> kept, int64_t history_tokens,
                            const Ends& ends, BuiltContext& out) const {
  Figures& f = out.figures;
  // Recall looks below the first kept message (or past everything read when none was kept);
  // nowhere when the prompt keeps the chat's whole history.
  const int64_t before_id =
      search_below(v, kept.empty() ? std::nullopt : std::optional(kept.front().history_id),
                   out.chat.cleared_through);
  Prompt prompt = assemble_prompt(assembler_, ends, std::move(kept),
                                  out.summary.used ? v.summary : std::nullopt, counter_);
  f.estimated_tokens = prompt.tokens;
  const auto started = std::chrono::steady_clock::now();
  EvidenceStep ev = add_evidence(recall_seams(), chat_id, out.chat.cleared_through, prompt.history,
                                 before_id, ends, f.user_truncated, prompt);
  out.evidence = std::move(ev.evidence);
  for (ContextWarning& w : ev.warnings) out.warnings.push_back(std::move(w));
  out.evidence_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  // Sectioned: custom blocks go under [Evidence] (its own head when no evidence came first).
  CustomStep custom =
      add_custom(prompt, ends, out.chat.custom, f.user_truncated,
                 settings_.layout == Layout::kSectioned && out.evidence.items.empty(), counter_);
  out.custom = std::move(custom.fit);
  if (custom.warning) out.warnings.push_back(std::move(*custom.warning));
  f.estimated_tokens = prompt.tokens;
  const PromptContents contents{prompt.history, history_tokens, out.summary, out.evidence,
                                out.custom};
  out.blocks = describe_blocks(ends, contents);
  out.delta = compute_delta(ends, contents, out.chat.blocks, counter_);
  out.messages = std::move(prompt.messages);
}

Ends ContextBuilder::begin(const std::string& chat_id, const std::string& user_text,
                           const BuildOptions& options, BuiltContext& out) const {
  Figures& f = out.figures;
  // A chat's own model brings its counter (switched by the caller) and its learned caps.
  std::optional<ModelCaps> caps;
  const auto on_model = [&](const std::string& model) {
    if (options.chat_model) caps = options.chat_model(model);
  };
  ChatStart start =
      start_chat(settings_, provider_.chat_state(chat_id), counter_, store_ != nullptr, on_model);
  f.counter = std::string(counter_.name());
  BuildOptions own = options;
  if (caps) {
    own.budget_cap = caps->budget_cap;
    own.messages_cap = caps->messages_cap;
  }
  out.chat = std::move(start.chat);
  out.warnings = std::move(start.warnings);
  out.state.before = start.state;
  out.state.after = start.state;
  Ends ends = fit_ends(settings_, out.chat, user_text, own, counter_);
  out.pins_left_out = ends.pins_left_out;
  if (ends.pins_left_out > 0)
    out.warnings.push_back(
        {"pins_left_out",
         fmt::format("{} of {} pinned fact(s) left out: they exceed {} tokens ({} of the budget)",
                     ends.pins_left_out, out.chat.pins.size(), ends.pins_max_tokens,
                     kPinnedShare)});
  f.budget_tokens = ends.budget_tokens;
  f.tools_tokens = ends.tools_tokens;
  if (ends.tools_over > 0)
    out.warnings.push_back(
        {"tools_over_budget",
         fmt::format("the tools' declarations take {} tokens, more than half the prompt budget: "
                     "the request goes {} tokens over it; offer this chat fewer tools (autonous "
                     "chat set ID --tools ...) or raise MAX_CONTEXT_TOKENS",
                     ends.tools_tokens, ends.tools_over)});
  f.system_tokens = ends.system_tokens;
  f.user_tokens = ends.user_tokens;
  f.user_truncated = ends.user_truncated;
  f.history_budget_tokens = ends.history_budget_tokens;
  out.state.budget_cap = own.budget_cap;
  return ends;
}

Verbatim ContextBuilder::read(const std::string& chat_id, const Ends& ends, const Marks& marks,
                              BuiltContext& out) const {
  VerbatimRead read = read_verbatim({provider_, store_, settings_, counter_}, chat_id, out.chat,
                                    out.state.before, ends, marks);
  if (read.restarted) {
    out.state.before = *read.restarted;
    out.state.after = *read.restarted;
    out.state.reset = true;  // stored even without a compaction
    out.warnings.push_back(*read.warning);
  }
  return std::move(read.verbatim);
}

Cut ContextBuilder::plan(const std::string& chat_id, const Verbatim& v, const Ends& ends,
                         const Marks& marks, const BuildOptions& options, bool will_fold,
                         BuiltContext& out) const {
  // The allocator, evidence first: a compaction lands on the target with the evidence recall
  // finds for the prompt it plans. It plans with the reserve (allocator.h), asks recall what it
  // finds below the planned cut, and plans again with that: no room is kept for evidence that
  // never comes (#28: a compaction at 2 000 tokens filled 0.40 with recall on, 0.60 off).
  // Between compactions the verbatim part grows into whatever evidence leaves, until warn.
  const EvidenceSeams recall = recall_seams();
  out.evidence_reserve =
      plan_reserve(recall, v, ends, will_fold, out.chat.strategy == Strategy::kSummarize);
  CompactionRequest request{
      out.chat.policy.thresholds,       marks,     out.state.before, out.evidence_reserve,
      options.min_level > Level::kNone, will_fold, settings_.summary};
  Cut cut = plan_compaction(v, ends, request, counter_);
  if (cut.first > 0 && out.evidence_reserve > 0) {
    const int64_t found = probe_evidence(recall, chat_id, out.chat.cleared_through, v, cut.first,
                                         ends, out.evidence_reserve);
    if (found < out.evidence_reserve) {
      out.evidence_reserve = found;
      request.evidence = found;
      cut = plan_compaction(v, ends, request, counter_);
    }
  }
  Figures& f = out.figures;
  out.state.compaction = cut.reason;
  f.original_count = static_cast<int64_t>(v.rows.messages.size());
  f.tokens_before = ends.fixed_tokens + v.summary_tokens + v.rows.tokens;
  if (cut.first > 0) {
    f.level = std::max(cut.level, Level::kAggressive);
    f.rounds = 1;
  }
  return cut;
}

void ContextBuilder::fold(const std::string& chat_id, Verbatim& v, Cut& cut,
                          const BuildOptions& options, BuiltContext& out) const {
  FoldStep folded =
      fold_leaving({*store_, summarizer_, settings_, counter_}, chat_id, out.chat.cleared_through,
                   v, cut, out.state.after, options.dry_run);
  cut.first = folded.first;
  if (folded.summary) {
    v.summary = std::move(folded.summary);
    v.summary_tokens = v.summary->tokens;
  }
  out.summarized = std::move(folded.summarized);
  out.summary.pending = folded.pending;
  out.state.after.summary_failures = folded.summary_failures;
  out.state.after.summary_skips = folded.summary_skips;
  for (ContextWarning& w : folded.warnings) out.warnings.push_back(std::move(w));
}

void ContextBuilder::record_fit(const Compression& c, BuiltContext& out) {
  Figures& f = out.figures;
  f.truncated_count = c.truncated_count;
  f.cut_messages = c.cut_count;
  f.tool_results_cleared = c.cleared_results;
  f.tool_results_cut = c.cut_results;
  // Normal is reported when it cut something (it applies on every turn after a compaction).
  if (c.cut_count > 0 || c.level > Level::kNormal) f.level = std::max(f.level, c.level);
  f.rounds = std::max(f.rounds, c.rounds);
  f.hard_truncated = c.hard_truncated;
  if (f.user_truncated) {  // the last resort ran
    f.level = Level::kEmergency;
    f.rounds = std::max(f.rounds, 1);
  }
}

BuiltContext ContextBuilder::build(const std::string& chat_id, const std::string& user_text,
                                   const BuildOptions& options) const {
  const auto started = std::chrono::steady_clock::now();
  BuiltContext out;
  const Ends ends = begin(chat_id, user_text, options, out);
  const Marks marks = count_marks(settings_, out.chat.policy);
  Verbatim v = read(chat_id, ends, marks, out);
  out.counted = std::move(v.counted);
  if (!out.counted.empty()) out.counted_by = std::string(counter_.stored_name());
  const bool summarize = out.chat.strategy == Strategy::kSummarize;
  const bool will_fold = summarize && out.state.before.summary_skips == 0;
  Cut cut = plan(chat_id, v, ends, marks, options, will_fold, out);
  if (summarize && cut.first > 0) fold(chat_id, v, cut, options, out);
  take_summary(v, out);

  // The fit uses the whole budget: the reserve steers compactions, it never drops history that a
  // compaction could not move (a failed summary keeps its messages verbatim).
  Fitted fitted = fit_history(compressor_, v, cut, ends, out.summary.tokens, out.state.before,
                              out.chat.policy.thresholds.target);
  out.state.after.cut_through = fitted.cut_through;
  Compression& c = fitted.compression;
  record_fit(c, out);
  // What the compressor's last resort dropped leaves the verbatim part too. Kept history starts
  // on a user message: a leading reply is left out (every turn alike, so no state changes).
  const size_t first = cut.first + static_cast<size_t>(c.dropped_count);
  const size_t lead = user_start(c.messages, 0);
  int64_t history_tokens = c.tokens;
  for (size_t i = 0; i < lead; ++i) history_tokens -= counter_.count_message(c.messages[i]);
  c.messages.erase(c.messages.begin(), c.messages.begin() + static_cast<ptrdiff_t>(lead));
  out.figures.compressed_count = static_cast<int64_t>(c.messages.size());
  out.figures.dropped_count = static_cast<int64_t>(first + lead);
  record_state(chat_id, v, first, options, out);

  finish(chat_id, v, std::move(c.messages), history_tokens, ends, out);
  out.figures.build_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
}

}  // namespace autonous::engine
