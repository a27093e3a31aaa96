#pragma once
// ContextBuilder: the context engine for one turn. Reads the chat's stored state (its own
// settings over the environment's, its clear point), picks the strategy, reads history through
// the Provider, fits it with the Compressor's levels and orders the prompt with the Assembler.
// The budget bounds the whole prompt: history gets what is left after the system prompt, the
// user message and the request framing; a user message too long for even that is cut (marker),
// so the prompt never exceeds the budget (MustFit). Reports the figures the context.compressed
// event carries. Not thread-safe (the provider holds a connection); cheap to construct.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/message.h"
#include "internal/context/policy.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::context {

class Provider;
class Compressor;
class Assembler;
class SummaryStore;
class Summarizer;

// Tokens always left for the user message: a budget that cannot hold the system prompt plus
// this much is refused as configuration.
inline constexpr int64_t kMinUserTokens = 16;

// The summarize strategy's knobs.
struct SummarySettings {
  int64_t keep_recent_tokens = 0;  // verbatim tail kept at a compaction; 0: a quarter of the budget
  int64_t max_tokens = 1024;       // SUMMARY_MAX_TOKENS: the summary's reply cap
};

struct ContextSettings {
  std::string system_prompt;
  int history_window = 50;
  int64_t max_chars_per_message = 4000;
  ContextPolicy policy;  // the environment's defaults; a chat's overrides go on top
  int64_t ceiling = 0;   // window − reserve when the model's window is known; 0: none
  SummarySettings summary;
};

// The header of the summary message that follows the system prompt.
inline constexpr std::string_view kSummaryHeader =
    "Summary of the earlier conversation (older messages are replaced by it):\n";

// What one compaction did (the context.summarized event).
struct SummaryOutcome {
  int64_t summary_id = 0;
  int64_t messages_covered = 0;  // folded in by this compaction
  int64_t covers_through = 0;
  int64_t summary_tokens = 0;
  int64_t calls = 0;  // summarizer calls (more than one when the span was chunked)
  std::string model;
  std::string usage_json = "[]";  // the usage of each call, a JSON array
  std::chrono::milliseconds latency{0};
};

// Something the operator should know about a turn (a context.warning event).
struct ContextWarning {
  std::string reason;  // summarize_unavailable | bad_chat_settings | summary_failed
  std::string message;
};

struct BuiltContext {
  std::vector<common::Message> messages;  // what would be sent
  int64_t original_count = 0;             // history messages read
  int64_t compressed_count = 0;           // history messages kept
  int64_t dropped_count = 0;
  int64_t truncated_count = 0;   // kept history messages that were cut
  int64_t cut_messages = 0;      // of those, cut by a compression level
  bool user_truncated = false;   // the user message itself was cut to fit
  int64_t estimated_tokens = 0;  // the whole prompt, by the counter (tokens_after)
  int64_t tokens_before = 0;     // the whole prompt before the levels compressed it
  int64_t budget_tokens = 0;
  int64_t system_tokens = 0;
  int64_t user_tokens = 0;
  int64_t history_budget_tokens = 0;
  Level level = Level::kNone;
  int rounds = 0;
  bool hard_truncated = false;
  bool summary_used = false;    // a summary message is in the prompt
  int64_t summary_id = 0;       // which one (context_summaries.id)
  int64_t summary_tokens = 0;
  std::optional<SummaryOutcome> summarized;  // this turn compacted history into a new summary
  int64_t summary_pending = 0;  // dry run: messages a compaction would fold in now
  Strategy strategy = Strategy::kTokenBudget;            // what ran
  Strategy requested_strategy = Strategy::kTokenBudget;  // what the settings asked for
  ContextPolicy policy;                                  // the chat's effective policy
  bool chat_settings = false;  // the chat has its own settings in effect
  int64_t cleared_through = 0;
  std::vector<ContextWarning> warnings;
  std::string counter;  // the tokens::TokenCounter's name
  std::chrono::microseconds build_time{0};
};

// How a rebuild after a provider's "context length exceeded" compresses harder.
struct BuildOptions {
  Level min_level = Level::kNone;  // compress at least at this level
  double budget_scale = 1.0;       // of the policy's budget, in (0, 1]
};

// The least whole-prompt budget that holds `system_prompt`, the framing and kMinUserTokens.
int64_t min_budget(const std::string& system_prompt, const tokens::TokenCounter& counter);

// Throws PolicyError (field "max_tokens", message says why) when `settings` leave less than
// kMinUserTokens for the user message after the system prompt and framing, and PolicyError for
// a policy that fails validate().
void check_budget(const ContextSettings& settings, const tokens::TokenCounter& counter);

class ContextBuilder {
 public:
  // All references must outlive the builder. Throws like check_budget().
  ContextBuilder(ContextSettings settings, Provider& provider, const Compressor& compressor,
                 const Assembler& assembler, const tokens::TokenCounter& counter);

  // The prompt for `user_text` in `chat_id`. Throws what the provider throws.
  BuiltContext build(const std::string& chat_id, const std::string& user_text,
                     const BuildOptions& options = {}) const;

  const ContextSettings& settings() const noexcept { return settings_; }

  // Enables the summarize strategy: `store` holds the chats' summaries; `summarizer` writes new
  // ones (nullptr: a dry run, which reports what it would fold in but calls nothing). Without
  // a store, `summarize` falls back to token_budget with a warning. Both must outlive the builder.
  void enable_summaries(SummaryStore& store, Summarizer* summarizer) {
    store_ = &store;
    summarizer_ = summarizer;
  }

 private:
  // The summarize strategy's history: the chat's summary plus the verbatim tail, compacting
  // when needed. Fills `out`'s summary fields; returns the verbatim candidates.
  std::vector<common::Message> summarized_history(const std::string& chat_id, int64_t chain_start,
                                                  int64_t fixed_without_summary,
                                                  const ContextPolicy& policy,
                                                  const BuildOptions& options,
                                                  std::optional<common::Message>& summary_message,
                                                  BuiltContext& out) const;

  ContextSettings settings_;
  Provider& provider_;
  const Compressor& compressor_;
  const Assembler& assembler_;
  const tokens::TokenCounter& counter_;
  SummaryStore* store_ = nullptr;
  Summarizer* summarizer_ = nullptr;
};

// What the engine decided, in one line: "aggressive: dropped 12 oldest messages …".
std::string describe_decision(const BuiltContext& built);

// The context.compressed event payload (and `autonous context` figures): a JSON object.
std::string figures_json(const BuiltContext& built);

// `autonous context` output: {"messages": [{role, content}…], figures…, decision, warnings}.
std::string dry_run_json(const BuiltContext& built);

}  // namespace autonous::context
