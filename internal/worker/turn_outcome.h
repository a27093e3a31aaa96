#pragma once
// TurnOutcome: what one turn of a task did, as a value: the contexts built (a second one after
// a provider's overflow), the LLM's answer or its failure, and what the slot must do with the
// task (complete, retry later, fail, release, or nothing when the lease was lost). The turn's
// events are built from it in one place (turn_events.h); the slot applies it to the queue.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/clock.h"
#include "internal/engine/built_context.h"
#include "internal/engine/calibration_store.h"
#include "internal/openai/types.h"

namespace autonous::worker {

// One context built and sent (context.compressed, llm.request).
struct ContextStep {
  engine::BuiltContext built;
  bool after_overflow = false;    // rebuilt after the provider said the prompt was too long
  double calibration_scale = 1;   // the estimator's scale this build counted with
  int64_t calibration_added = 0;  // and the tokens it counted as the server's own per request
  common::TimePoint at;
};

// An LLM call (or a turn step) that failed.
struct TurnFailure {
  std::string reason;  // "timeout", "http_429", "internal", "lease_expired", …
  std::string error;   // readable; the server's own message when it sent one
  std::optional<long> status;
  std::chrono::milliseconds latency{0};
  std::optional<std::chrono::milliseconds> retry_after;
  common::TimePoint at;
  bool outage = false;  // the provider was unreachable or overloaded: RETRY_BUDGET_SECONDS applies
};

// A prompt budget learned from an endpoint's overflow answer (context.limit_learned).
struct LearnedBudget {
  std::string endpoint;
  std::string model;
  int64_t budget_tokens = 0;  // stored (never above an earlier learned budget)
  int64_t sent_tokens = 0;    // what the refused prompt cost, by the engine's counter
  std::optional<int64_t> stated_limit;
  std::optional<int64_t> server_tokens;  // what the server counted for it, when it said
  // The overflow answer (TurnOutcome::overflows' index) that taught it; none for a probable
  // overflow's, stored once the smaller prompt was answered (at `at`).
  std::optional<size_t> overflow;
  common::TimePoint at;
};

// One tool call the model made, run (#29).
struct ToolRun {
  size_t step = 0;  // the index in TurnOutcome::tool_replies of the reply that asked for it
  std::string id;
  std::string name;
  std::string source = "http";
  bool ok = false;  // the tool answered (2xx); otherwise the model read an error
  std::optional<long> http_status;
  std::chrono::milliseconds latency{0};
  int64_t result_bytes = 0;   // as received
  int64_t result_tokens = 0;  // as stored
  bool cut = false;           // cut to TOOL_RESULT_MAX_TOKENS (head and tail kept)
  std::string error;          // what went wrong, when not ok
};

// A call the turn made besides its chat completions (recall's embeddings): what the API
// reported, for its llm.response event and its cost.
struct SideCall {
  std::string model;
  std::optional<common::Usage> usage;
  std::chrono::milliseconds latency{0};
};

struct TurnOutcome {
  enum class Kind {
    kDone,        // complete the task with the reply
    kRetryLater,  // schedule another attempt after `delay`
    kFailed,      // fail the task for good with `error`
    kRelease,     // shutdown: give the lease back untouched
    kLeaseLost,   // another worker owns the task now: commit nothing
  };
  Kind kind = Kind::kFailed;
  int attempt = 0;
  bool reclaimed = false;
  common::TimePoint started_at;
  common::TimePoint first_claimed_at;  // the task's first claim: where the retry budget counts from
  common::TimePoint enqueued_at;       // the task's created_at (the epoch when unknown)
  std::string model;                   // the chat model requested
  std::vector<ContextStep> contexts;
  std::vector<TurnFailure> overflows;        // each overflow answer that caused a rebuild
  std::vector<LearnedBudget> learned;        // what each overflow answer taught (in order)
  std::optional<std::string> truncated;      // the server counted far fewer prompt tokens
  std::optional<openai::ChatResult> result;  // kDone
  // kDone: a tool-using turn's steps, stored between the user's message and the reply (each
  // assistant message with its tool_calls, then one tool message per call).
  std::vector<common::Message> steps;
  std::vector<openai::ChatResult> tool_replies;  // the replies that called tools, in order
  std::vector<ToolRun> tool_runs;
  std::vector<int64_t> step_tokens;  // each later request's estimate (after tool_replies[i])
  // The calibration stored after this answer, when calibrating.
  std::optional<engine::Calibration> calibration_after;
  std::vector<SideCall> embedding_calls;  // recall's embeddings calls that were answered
  // Whether the chat endpoint's and the embeddings endpoint's calls are priced (COST_PRICES).
  bool priced = true;
  bool embeddings_priced = true;
  // The attempt went to OPENAI_FALLBACK_MODEL (`model`) after this many provider failures of
  // the main model in a row (`fallback_from`); unset: the main model.
  std::optional<int> fallback_after;
  std::string fallback_from;
  std::optional<TurnFailure> failure;  // kRetryLater, kFailed
  std::chrono::milliseconds delay{0};  // kRetryLater
  std::string error;                   // kFailed, kRetryLater: what tasks.error gets
  common::TimePoint finished_at;
};

}  // namespace autonous::worker
