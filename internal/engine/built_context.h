#pragma once
// BuiltContext: what the engine decided for one turn, as a value: the messages to send, the
// figures the context.compressed event carries, the summary in use and what a compaction did,
// the chat's resolved policy, and warnings. context_report.h renders it (events, dry run).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/message.h"
#include "internal/common/usage.h"
#include "internal/engine/policy.h"
#include "internal/engine/provider.h"
#include "internal/recall/recall.h"

namespace autonous::engine {

// The counts and token figures of one build.
struct Figures {
  int64_t original_count = 0;    // history messages read
  int64_t compressed_count = 0;  // history messages kept
  int64_t dropped_count = 0;
  int64_t truncated_count = 0;  // kept history messages that were cut
  int64_t cut_messages = 0;     // of those, cut by a compression level
  // Kept tool results carried cleared (tool_results.h) or cut by a level: their tool_call_ids,
  // oldest first.
  std::vector<std::string> tool_results_cleared;
  std::vector<std::string> tool_results_cut;
  bool user_truncated = false;   // the user message itself was cut to fit
  int64_t estimated_tokens = 0;  // the whole prompt, by the counter (tokens_after)
  int64_t tokens_before = 0;     // the whole prompt before the levels compressed it
  int64_t budget_tokens = 0;
  int64_t tools_tokens = 0;  // the tools' declarations, left out of budget_tokens
  int64_t system_tokens = 0;
  int64_t user_tokens = 0;
  int64_t history_budget_tokens = 0;
  Level level = Level::kNone;
  int rounds = 0;
  bool hard_truncated = false;
  std::string counter;  // the TokenCounter's name
  std::chrono::microseconds build_time{0};
};

// The summary message in the prompt, if any.
struct SummaryInUse {
  bool used = false;
  int64_t id = 0;  // context_summaries.id
  int64_t tokens = 0;
  int64_t pending = 0;  // dry run: messages a compaction would fold in now
};

// What one compaction did (the context.summarized event).
struct SummaryOutcome {
  int64_t summary_id = 0;
  int64_t messages_covered = 0;  // folded in by this compaction
  int64_t covers_through = 0;
  int64_t summary_tokens = 0;
  int64_t calls = 0;    // summarizer calls (more than one when the span was chunked)
  int64_t skipped = 0;  // leaving messages left out of the summary (over kMaxFoldCalls' worth)
  // Tokens cut from summarizer answers over SUMMARY_MAX_TOKENS by our own count (a server that
  // ignored max_tokens, or sent no usage), and from a stored summary that was over it.
  int64_t cut_tokens = 0;
  std::string model;
  std::vector<std::optional<common::Usage>> usage;  // each call's, as the API reported it
  std::chrono::milliseconds latency{0};
};

// Something the operator should know about a turn (a context.warning or
// context.summary_failed event).
struct ContextWarning {
  // summarize_unavailable | bad_chat_settings | summary_failed | summary_dropped |
  // summary_backoff | state_reset | gatherer_failed | pins_left_out | custom_left_out |
  // tools_over_budget
  std::string reason;
  std::string message;
};

// A chat's settings as this turn resolved them.
struct ResolvedChat {
  ContextPolicy policy;                                  // the chat's effective policy
  Strategy strategy = Strategy::kTokenBudget;            // what ran
  Strategy requested_strategy = Strategy::kTokenBudget;  // what the settings asked for
  bool own_settings = false;                             // the chat has its own settings in effect
  int64_t cleared_through = 0;
  std::vector<std::string> pins;    // the chat's pinned facts, oldest first
  std::vector<BlockRecord> blocks;  // the last answered prompt's stable blocks, by name
  std::vector<CustomBlock> custom;  // P4 custom blocks, oldest first
};

// The chat's context state around this turn (provider.h ContextState).
struct StateChange {
  ContextState before;  // as read (fresh when it belonged to another clear point)
  ContextState after;   // as stored after this turn (equal to `before` between compactions)
  CompactionReason compaction = CompactionReason::kNone;  // this turn moved the verbatim start
  std::optional<int64_t> budget_cap;  // a learned limit lowered this turn's budget to this
  bool reset = false;  // the stored state was set aside (its rows vanished): store the fresh one
};

// One block of the prompt. Tiers: 0 instructions (never cut), 1 task and state (the user's
// message, pinned facts), 2 evidence (recalled messages, documents), 3 history (the summary, the
// verbatim messages), 4 custom. Lower tiers are cut last. `stable`: part of the cacheable prefix
// (changes only at a compaction, a summary or an edit of the settings or pins).
struct Block {
  std::string name;  // system | pinned | summary | history | evidence | user
  int tier = 0;
  int64_t tokens = 0;
  int64_t count = 0;  // messages, pins or evidence items in it
  bool stable = false;
  std::vector<int64_t> ids;  // history: its first and last id; evidence: the items' ids
};

// The delta builder: each stable block (system, pinned, summary, history) hashed with SHA-256
// and compared with the chat's last answered prompt. A provider's prompt cache serves an exact
// prefix, so the predicted cached tokens are those of the leading run of reused blocks (of the
// history: the messages that were already in the last prompt).
struct Delta {
  std::vector<std::string> reused;   // stable blocks identical to the last prompt's
  std::vector<std::string> changed;  // stable blocks that differ (or are new)
  int64_t predicted_cached_tokens = 0;
  std::vector<BlockRecord> records;  // stored with the answered turn (Engine::write_state)
};

struct BuiltContext {
  std::vector<common::Message> messages;  // what would be sent
  StateChange state;
  Figures figures;
  SummaryInUse summary;
  std::optional<SummaryOutcome> summarized;  // this turn compacted history into a new summary
  ResolvedChat chat;
  std::vector<ContextWarning> warnings;
  std::vector<Block> blocks;     // the prompt's blocks, in prompt order
  recall::Evidence evidence;     // what recall and the documents contributed
  int64_t evidence_reserve = 0;  // budget kept from the history for evidence (allocator.h)
  // The whole evidence step: the index's catch-up, embeddings, gatherers, packing, counting.
  std::chrono::microseconds evidence_time{0};
  int64_t pins_left_out = 0;  // pinned facts over their share of the budget
  CustomFit custom;           // the P4 custom blocks placed (ids, tokens, halved, left out)
  Delta delta;                // this prompt against the chat's last answered one
  // History rows this build counted for want of a stored count, and the counter's stored_name():
  // stored with the answered turn (Engine::write_state; migration 0018).
  std::vector<TokenCount> counted;
  std::string counted_by;
};

// How a turn is built: a rebuild after a provider's "context length exceeded" compacts
// (min_level above none) within a smaller budget; a learned limit caps the budget; a dry run
// stores nothing (no summary, no state).
// What a chat's own model brings to its build (BuildOptions::chat_model): the caps learned for
// that model, in place of those the options hold for OPENAI_MODEL.
struct ModelCaps {
  std::optional<int64_t> budget_cap;
  std::optional<int64_t> messages_cap;
};

struct BuildOptions {
  Level min_level = Level::kNone;     // above none: the provider refused the last prompt
  double budget_scale = 1.0;          // of the policy's budget, in (0, 1]
  std::optional<int64_t> budget_cap;  // a learned limit for the endpoint and model (whole prompt)
  // A cap on the messages alone, the tools' declarations left out (the window probe's).
  std::optional<int64_t> messages_cap;
  bool dry_run = false;
  // The caller stores the state itself once the prompt was answered (the worker: a turn that
  // fails, e.g. in an outage, must not move the chat's state or its summary back-off).
  bool defer_commit = false;
  // What the declarations of the tools offered to the chat (its policy's `tools`) cost in every
  // request: the prompt's budget leaves them room, at most half of it. Unset: no tools.
  std::function<int64_t(const ToolNames&)> declarations;
  // Called with a chat's own model (`chat set --model`) before its budget is checked, and with
  // OPENAI_MODEL again when the chat's settings then prove bad: the worker switches its counter
  // to the model's and returns the model's caps (nullopt: keep these options'). Unset: the
  // chat's model changes only the budget.
  std::function<std::optional<ModelCaps>(const std::string& model)> chat_model;
};

// The level a rebuild after an overflow starts from: one above `level`.
Level next_level(Level level) noexcept;

}  // namespace autonous::engine
