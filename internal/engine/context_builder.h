#pragma once
// ContextBuilder: the context engine for one turn, a pipeline of steps that each return a value
// (each in its own file, with its own tests):
//   start_chat (context_chat.h)      the chat's policy, pins, blocks and the state it starts from
//   fit_ends (context_ends.h)        the system message and the user message within the budget
//   read_verbatim (context_verbatim.h) the history since the last compaction, the summary in use
//   plan_reserve (context_evidence.h) the room a compaction keeps for evidence
//   plan_compaction (context_cut.h)  whether this turn compacts and where the cut falls; on a
//     compaction probe_evidence (context_evidence.h) asks recall what it finds below the cut,
//     and the cut is planned again with that
//   fold_leaving (context_fold.h)    summarize: what leaves folded into the summary
//   fit_history (context_fit.h)      the kept history fitted (the cut mark), the last resort
//   assemble_prompt (context_prompt.h), add_evidence, add_custom: the prompt, in order
//   describe_blocks, compute_delta (context_blocks.h): its blocks and the cacheable prefix
// Between compactions the prompt only grows at its end. The budget bounds the whole prompt
// (MustFit). Stores the state after a compaction unless it is a dry run. Returns what it decided
// as a BuiltContext value. Not thread-safe (the provider holds a connection); cheap to construct.

#include <string>

#include "internal/engine/built_context.h"
#include "internal/engine/compaction.h"
#include "internal/engine/compressor.h"
#include "internal/engine/context_ends.h"
#include "internal/engine/context_evidence.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/context_verbatim.h"
#include "internal/engine/summary_compactor.h"
#include "internal/recall/recall.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

class Provider;
class Compressor;
class Assembler;

// What the builder may call besides its provider, each optional, given once at construction
// (#28 item 8: one argument, composed once, instead of setters). Each must outlive the builder.
struct BuilderSeams {
  // summarize's summaries: without a store, `summarize` falls back to token_budget with a warning.
  SummaryStore* summaries = nullptr;
  // Writes new summaries; nullptr: only reports what a compaction would fold in (a dry run).
  Summarizer* summarizer = nullptr;
  // Recall (RECALL=on): finds the chat's earlier messages and the documents; without it no
  // evidence is gathered.
  recall::Searcher* searcher = nullptr;
  // Vector search (EMBEDDING_MODEL): embeds the question and the chat's new messages each turn.
  recall::Embedder* embedder = nullptr;
};

class ContextBuilder {
 public:
  // All references must outlive the builder. Throws PolicyError like check_budget().
  ContextBuilder(ContextSettings settings, Provider& provider, const Compressor& compressor,
                 const Assembler& assembler, const tokens::TokenCounter& counter,
                 BuilderSeams seams = {});

  // The prompt for `user_text` in `chat_id`. Throws what the provider throws.
  BuiltContext build(const std::string& chat_id, const std::string& user_text,
                     const BuildOptions& options = {}) const;

  const ContextSettings& settings() const noexcept { return settings_; }

  // Stores the chat's state after `built` when it changed (build() does it itself unless the
  // options deferred it). Throws what the provider throws.
  void commit(const std::string& chat_id, const BuiltContext& built) const;
  // Whether `built` changed the chat's stored state.
  static bool state_changed(const BuiltContext& built) noexcept {
    return built.state.after != built.state.before || built.state.reset;
  }

 private:
  // The phases of build(), each a step above with what it records in `out`:
  // the chat and the ends (start_chat, fit_ends; the pins warning, the ends' figures);
  Ends begin(const std::string& chat_id, const std::string& user_text, const BuildOptions& options,
             BuiltContext& out) const;
  // the verbatim part (read_verbatim; a restart of the state);
  Verbatim read(const std::string& chat_id, const Ends& ends, const Marks& marks,
                BuiltContext& out) const;
  // the cut, evidence first (plan_reserve, plan_compaction, probe_evidence);
  Cut plan(const std::string& chat_id, const Verbatim& v, const Ends& ends, const Marks& marks,
           const BuildOptions& options, bool will_fold, BuiltContext& out) const;
  // summarize's fold (fold_leaving: the new summary into `v`, the start into `cut`);
  void fold(const std::string& chat_id, Verbatim& v, Cut& cut, const BuildOptions& options,
            BuiltContext& out) const;
  // the fit's figures (fit_history's compression).
  static void record_fit(const Compression& c, BuiltContext& out);
  // Takes the summary in use when it fits the history budget (MustFit first).
  static void take_summary(const Verbatim& v, BuiltContext& out);
  // The state after this turn; stores it when it changed (not in a dry run).
  void record_state(const std::string& chat_id, const Verbatim& v, size_t first,
                    const BuildOptions& options, BuiltContext& out) const;
  // Orders the prompt, adds the evidence and the custom blocks, and describes the blocks.
  void finish(const std::string& chat_id, const Verbatim& v, std::vector<common::Message> kept,
              int64_t history_tokens, const Ends& ends, BuiltContext& out) const;
  EvidenceSeams recall_seams() const noexcept {
    return {searcher_, embedder_, settings_, counter_};
  }

  ContextSettings settings_;
  Provider& provider_;
  const Compressor& compressor_;
  const Assembler& assembler_;
  const tokens::TokenCounter& counter_;
  SummaryStore* const store_;
  Summarizer* const summarizer_;
  recall::Searcher* const searcher_;
  recall::Embedder* const embedder_;
};

}  // namespace autonous::engine
