#pragma once
// SummaryCompactor: the summarize strategy's history for one turn. It reads the chat's summary
// and the verbatim tail after it; when usage reaches warn (or rows fell out of HISTORY_WINDOW
// since the last summary), it folds the oldest of them into a new summary through the
// Summarizer (rolling: previous summary + only the newly evicted messages, chunked to the
// summarizer's window), stores it and keeps the newest tail. A failed fold loses nothing: the
// history is returned whole with a warning, and the next compaction tries again. Not
// thread-safe (the provider and store hold a connection).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/message.h"
#include "internal/context/built_context.h"
#include "internal/context/context_settings.h"
#include "internal/context/summary.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::context {

class Provider;

// The header of the summary message that follows the system prompt.
inline constexpr std::string_view kSummaryHeader =
    "Summary of the earlier conversation (older messages are replaced by it):\n";

// What one turn's compaction step decided.
struct Compaction {
  std::vector<common::Message> history;  // the verbatim candidates, oldest first
  std::optional<common::Message> summary_message;
  SummaryInUse summary;
  std::optional<SummaryOutcome> summarized;
  Level level = Level::kNone;
  int rounds = 0;
  int64_t tokens_before = 0;  // the whole prompt before this step, with the previous summary
  std::optional<ContextWarning> warning;
};

struct CompactionInput {
  std::string chat_id;
  int64_t chain_start = 0;   // the chat's clear point
  int64_t fixed_tokens = 0;  // system prompt, user message and framing
  int64_t budget_tokens = 0;
  ContextPolicy policy;
  Level min_level = Level::kNone;
};

class SummaryCompactor {
 public:
  // `summarizer` may be nullptr: a dry run, which reports what it would fold in (pending) but
  // calls nothing. All references must outlive the compactor.
  SummaryCompactor(const ContextSettings& settings, Provider& provider, SummaryStore& store,
                   Summarizer* summarizer, const tokens::TokenCounter& counter);

  // Throws what the provider and the store throw on reads; a failed fold is a warning.
  Compaction run(const CompactionInput& in) const;

 private:
  // Folds `evicted` into `previous` and stores the new summary. Throws on any failure.
  SummaryOutcome fold(const std::string& chat_id, int64_t chain_start,
                      const std::optional<Summary>& previous,
                      const std::vector<common::Message>& evicted, Summary& stored) const;
  void use(const Summary& s, Compaction& out) const;
  int64_t keep_tokens(const CompactionInput& in) const;

  const ContextSettings& settings_;
  Provider& provider_;
  SummaryStore& store_;
  Summarizer* summarizer_;
  const tokens::TokenCounter& counter_;
};

// A history message as the compressor will see it: valid UTF-8, cut to the character cap.
common::Message prepared(common::Message m, int64_t max_chars);

}  // namespace autonous::context
