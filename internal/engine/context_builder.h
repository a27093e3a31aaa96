#pragma once
// ContextBuilder: the context engine for one turn. Resolves the chat's policy (its own settings
// over the environment's, its clear point) and its stored state, fits the system prompt and the
// user message, reads the verbatim part of the history (from where the last compaction left it,
// at most read_limit messages), plans a compaction when a mark is crossed (compaction.h;
// under summarize the leaving messages are folded into the summary, with a back-off after
// failures), fits the rest with the Compressor and orders the prompt with the Assembler. Between
// compactions the prompt only grows at its end. The budget bounds the whole prompt: a user
// message too long for even the system prompt's remainder is cut (marker), so the prompt never
// exceeds the budget (MustFit). Stores the state after a compaction unless it is a dry run.
// Returns what it decided as a BuiltContext value. Not thread-safe (the provider holds a
// connection); cheap to construct.

#include <string>

#include "internal/engine/built_context.h"
#include "internal/engine/compaction.h"
#include "internal/engine/compressor.h"
#include "internal/engine/context_ends.h"
#include "internal/engine/context_settings.h"
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
  // The verbatim candidates of this turn and the summary in use.
  struct Verbatim {
    Prepared rows;
    std::optional<Summary> summary;
    int64_t summary_tokens = 0;
    int64_t after = 0;   // rows above this id were read
    bool full = false;   // read as many as asked: older ones may be unread
    bool older = false;  // older messages of the chat (after its clear point) left the prompt
  };

  // Reads the chat's settings and state: the policy and the state this turn starts from.
  void begin(const std::string& chat_id, BuiltContext& out) const;
  ResolvedChat resolve(const ChatState& state, std::optional<ContextWarning>& warning) const;
  // The summary in use, when it fits the history budget.
  void take_summary(Verbatim& v, BuiltContext& out) const;
  // The tokens a compaction keeps for evidence before recall is asked (allocator.h).
  int64_t allocate(const Verbatim& v, const Ends& ends, bool will_fold, bool summarize) const;
  // What the evidence for this turn's question would cost if the verbatim part started at
  // v.rows.messages[first]: recall run ahead of the cut, within the reserve. The reserve itself
  // when recall cannot be asked ahead (embeddings, whose question vector is one call a turn; a
  // failing index).
  int64_t probe_evidence(const std::string& chat_id, const Verbatim& v, size_t first,
                         const Ends& ends, const BuiltContext& out) const;
  // `rows` from index `first` on.
  static Prepared tail(const Prepared& rows, size_t first);
  // Orders the prompt (the summary leading the first kept user message), adds the evidence and
  // describes the blocks.
  void finish(const std::string& chat_id, const Verbatim& v, std::vector<common::Message> kept,
              int64_t history_tokens, Ends& ends, BuiltContext& out) const;
  // The verbatim candidates; restarts the chat's state when its rows vanished.
  Verbatim read_verbatim(const std::string& chat_id, BuiltContext& out, const Ends& ends,
                         const Marks& marks) const;
  Verbatim read_from(const std::string& chat_id, const BuiltContext& out, const Ends& ends,
                     const Marks& marks) const;
  bool restart_if_rows_vanished(const std::string& chat_id, BuiltContext& out, int64_t after) const;
  // What the summary may take: a fold replaces it, so room for a full-size new one.
  int64_t summary_room(const Verbatim& v, bool will_fold) const;
  // Compacts when a mark is crossed, down to the target with `evidence` tokens of evidence.
  Cut plan(const Verbatim& v, const Ends& ends, int64_t evidence, const Marks& marks,
           const BuildOptions& options, bool will_fold, const BuiltContext& out) const;
  // Summarize: folds the messages leaving at `cut` into the summary (or backs off); updates
  // the summary in `v`, the state and the report in `out`. After a failed call, `cut` moves
  // back to what was folded: the rest stays verbatim.
  void fold(const std::string& chat_id, Verbatim& v, Cut& cut, const BuildOptions& options,
            BuiltContext& out) const;
  // Fits the history the plan kept (compress()) with the chat's cut mark, which it moves when
  // this turn compacts or the last resort runs (out.state.after.cut_through).
  Compression fit(const Verbatim& v, const Cut& cut, const Ends& ends, BuiltContext& out) const;
  // Up to which history id the prompt carries its oversized messages cut, between compactions:
  // what the last compaction kept (`cut_through`); every one when that compaction was for
  // tokens (threshold, overflow: the chat is bound by its budget, and a long message cut as it
  // enters keeps the next compaction away); newer ones whole when it was for the message window
  // (there is room). Both change only at a compaction, so the prompt only grows at its end.
  static int64_t cut_limit(int64_t cut_through, CompactionReason last_reason) noexcept;
  // Fits what is left with the compressor; records the figures in `out`. The oversized messages
  // up to `cut_through` (a history id, cut_limit()) are carried cut.
  Compression compress(Prepared kept, const Ends& ends, int64_t summary_tokens, int64_t cut_through,
                       BuiltContext& out) const;
  // The state after this turn; stores it when it changed (not in a dry run).
  void record_state(const std::string& chat_id, const Verbatim& v, size_t first,
                    const BuildOptions& options, BuiltContext& out) const;
  // Recall: gathers evidence for the user's message into the room the prompt leaves and puts it
  // after the user's own text (before the layout's suffix), in the one message that changes every
  // turn.
  void add_evidence(const std::string& chat_id, const std::vector<common::Message>& kept,
                    int64_t before_id, const Ends& ends, BuiltContext& out) const;
  // Embeds the question (into `q`) and the chat's messages that have no vector yet, in one call;
  // a failure leaves `q` without a vector and says so. Returns what it did.
  recall::GathererRun embed_question(recall::RecallQuery& q, BuiltContext& out) const;
  // Joins `block` into the last (user) message before the layout's suffix, after "\n\n" or the
  // [Evidence] head, when the recounted prompt still fits: the tokens it added; nullopt (and
  // nothing changed) otherwise.
  std::optional<int64_t> join_into_user(const Ends& ends, bool section_head,
                                        const std::string& block, BuiltContext& out) const;
  // P4: the chat's custom blocks in the room the prompt leaves, after the evidence.
  void add_custom(const Ends& ends, BuiltContext& out) const;
  std::string embedding_input(const std::string& text) const;
  // Embeds texts[from, to) in halves after a refusal; `state` marks each text got (1) or refused
  // on its own (2); a failure that is not a refusal (the step's time is up) sets `stopped` and
  // leaves the rest untried (0), for a later turn. Returns how many were refused.
  int64_t embed_halves(const std::vector<std::string>& texts, size_t from, size_t to,
                       std::vector<std::vector<float>>& vectors, std::vector<char>& state,
                       bool& stopped) const;
  // The delta builder: this prompt's stable blocks against the last answered prompt's.
  void compute_delta(const Ends& ends, const std::vector<common::Message>& kept,
                     int64_t history_tokens, BuiltContext& out) const;
  // The blocks of the finished prompt.
  void describe_blocks(const Ends& ends, const std::vector<common::Message>& kept,
                       int64_t history_tokens, BuiltContext& out) const;

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
