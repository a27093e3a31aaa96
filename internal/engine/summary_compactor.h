#pragma once
// SummaryCompactor: the summarize strategy's fold. At a compaction the builder hands it the
// messages leaving the verbatim part; it folds them into the chat's summary through the
// Summarizer (rolling: the previous summary plus only the new messages, chunked to the
// summarizer's window, at most kMaxFoldCalls calls; what does not fit them is left out, oldest
// first) and stores the result. A failed call keeps what the calls before it folded (stored as
// a summary covering that far) and reports the failure and what was not folded; the builder
// keeps that verbatim or drops it, and its back-off decides when a compaction tries again. The
// summary reaches the chat model as data: a marked block leading the first kept user message
// (summary_block), never with system authority. Not thread-safe (the store holds a connection).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "internal/common/message.h"
#include "internal/engine/built_context.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/summary.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// A compaction folds at most this many summarizer calls' worth of messages; older ones among
// those leaving are left out of the summary (counted as skipped): a chat switched to summarize
// with a long history gets its reply after a bounded delay.
inline constexpr int kMaxFoldCalls = 3;

// The summary as the chat model reads it: a marked data block, followed by the message it leads.
std::string summary_block(std::string_view summary_text);

// What the block costs in the prompt: counted as a user message of its own (framing included),
// which is never less than what it adds to the message it leads.
int64_t summary_block_tokens(std::string_view summary_text, const tokens::TokenCounter& counter);

// `text` within `limit` tokens by `counter` (cut with a marker when over; `cut_tokens` grows by
// what was cut). A stored summary is held to kStoredSummaryFactor times SUMMARY_MAX_TOKENS
// wherever it is read (the prompt, the next fold): an older binary may have kept one whole, and
// our estimate may count a legitimate one (CJK, say) up to about 3x what the API counted.
inline constexpr int64_t kStoredSummaryFactor = 4;
std::string bounded_summary(std::string text, int64_t limit, const tokens::TokenCounter& counter,
                            int64_t& cut_tokens);

struct FoldInput {
  std::string chat_id;
  int64_t chain_start = 0;
  std::optional<Summary> previous;
  std::vector<common::Message> leaving;  // prepared, oldest first
};

struct Fold {
  std::optional<Summary> stored;  // the new summary, when at least one call succeeded
  SummaryOutcome outcome;
  std::optional<std::string> error;  // a call failed (what was folded before it is stored)
  int64_t unfolded = 0;  // the newest leaving messages not folded (a failure, or kMaxFoldCalls)
};

class SummaryCompactor {
 public:
  // All references must outlive the compactor.
  SummaryCompactor(const ContextSettings& settings, SummaryStore& store, Summarizer& summarizer,
                   const tokens::TokenCounter& counter);

  // Throws what the store throws when saving; a failed summarizer call is Fold::error.
  Fold fold(FoldInput in) const;

 private:
  // The newest of `leaving` that kMaxFoldCalls calls can take, each cut to half a call's input.
  std::vector<common::Message> fitting(std::vector<common::Message> leaving,
                                       int64_t& skipped) const;
  // A message's tokens in a summary call (count_message + the call's framing).
  int64_t cost(const common::Message& m) const;
  void store(const FoldInput& in, const std::string& text, int64_t through, int64_t covered,
             Fold& out) const;

  const ContextSettings& settings_;
  SummaryStore& store_;
  Summarizer& summarizer_;
  const tokens::TokenCounter& counter_;
};

}  // namespace autonous::engine
