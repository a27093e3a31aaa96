#pragma once
// LlmSummarizer: the summarize strategy's LLM call. It goes through the slot's openai::Client
// (same transport, timeout and error classification), asks for the structured summary the
// summaries issue names (goal and requests, facts verbatim, decisions, preferences, open
// questions) at temperature 0.2 under SUMMARY_MAX_TOKENS, retries one transient failure after
// a short pause, and refuses an empty or cut-off answer. Not thread-safe: one per slot.

#include <functional>
#include <string>
#include <string_view>

#include "internal/context/summary.h"

namespace autonous::openai {
class Client;
}
namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::worker {

// The summarizer's system message. autonous-stub recognises summary requests by its start.
inline constexpr std::string_view kSummaryInstructions =
    "You maintain a running summary of a conversation between a user and an assistant. You get "
    "the previous summary (it may be empty) and the messages that follow it. Write the updated "
    "summary, which replaces the previous one, with exactly these sections:\n"
    "## Goal and requests\n## Facts the user stated\n## Decisions and answers given\n"
    "## Preferences (language, tone)\n## Open questions\n"
    "Copy names, numbers, dates and links verbatim. Keep every fact of the previous summary "
    "unless the new messages correct it. Be concise. Write only the summary.";

struct SummarizerOptions {
  std::string model;             // SUMMARY_MODEL (the chat model when unset)
  int64_t max_tokens = 1024;     // SUMMARY_MAX_TOKENS: the reply cap
  int64_t window_budget = 8000;  // the summary model's window − max_tokens
  std::chrono::milliseconds retry_pause{500};
};

class LlmSummarizer final : public context::Summarizer {
 public:
  // All references must outlive the summarizer.
  LlmSummarizer(openai::Client& client, const tokens::TokenCounter& counter,
                SummarizerOptions options);

  // Polled during the call (lease renewal, shutdown); set per task.
  void set_keep_going(std::function<bool()> keep_going) { keep_going_ = std::move(keep_going); }

  context::SummaryCall summarize(const std::string& previous,
                                 const std::vector<common::Message>& evicted) override;
  int64_t input_budget() const override;

 private:
  openai::Client& client_;
  const tokens::TokenCounter& counter_;
  SummarizerOptions options_;
  std::function<bool()> keep_going_;
};

}  // namespace autonous::worker
