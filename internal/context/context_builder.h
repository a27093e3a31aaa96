#pragma once
// ContextBuilder: the context engine for one turn. Resolves the chat's policy (its own settings
// over the environment's, its clear point), fits the system prompt and the user message, reads
// history through the Provider (or the SummaryCompactor under summarize), fits it with the
// Compressor's levels and orders the prompt with the Assembler. The budget bounds the whole
// prompt: history gets what is left after the system prompt, the user message and the request
// framing; a user message too long for even that is cut (marker), so the prompt never exceeds
// the budget (MustFit). Returns what it decided as a BuiltContext value. Not thread-safe (the
// provider holds a connection); cheap to construct.

#include <string>

#include "internal/context/built_context.h"
#include "internal/context/compressor.h"
#include "internal/context/context_settings.h"
#include "internal/context/summary_compactor.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::context {

class Provider;
class Compressor;
class Assembler;
class SummaryStore;
class Summarizer;
struct ChatState;

class ContextBuilder {
 public:
  // All references must outlive the builder. Throws PolicyError like check_budget().
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
  // The system prompt and the user message, fitted to the budget.
  struct Ends {
    common::Message system;
    common::Message user;
    int64_t budget_tokens = 0;
    int64_t system_tokens = 0;
    int64_t user_tokens = 0;
    bool user_truncated = false;
    int64_t history_budget_tokens = 0;  // what history (and a summary) may cost
    int64_t fixed_tokens = 0;           // framing + system + user
  };

  ResolvedChat resolve(const ChatState& state, std::optional<ContextWarning>& warning) const;
  Ends fit_ends(const std::string& user_text, const ContextPolicy& policy,
                const BuildOptions& options) const;
  // The history candidates, and the summary under summarize.
  Compaction read_history(const std::string& chat_id, const ResolvedChat& chat, const Ends& ends,
                          const BuildOptions& options) const;
  // Records the compaction's summary, warnings and level in `out`; returns the summary message
  // when it fits the history budget.
  std::optional<common::Message> take_summary(Compaction& history, BuiltContext& out) const;
  // Fits the history candidates with the compressor; records the figures in `out`.
  Compression compress(Compaction history, const Ends& ends, const BuildOptions& options,
                       BuiltContext& out) const;

  ContextSettings settings_;
  Provider& provider_;
  const Compressor& compressor_;
  const Assembler& assembler_;
  const tokens::TokenCounter& counter_;
  SummaryStore* store_ = nullptr;
  Summarizer* summarizer_ = nullptr;
};

}  // namespace autonous::context
