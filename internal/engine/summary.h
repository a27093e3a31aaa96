#pragma once
// Summaries for the `summarize` strategy: a chat's older history folded by an LLM into one
// structured text that rides right after the system prompt. Rolling: a new summary is written
// from the previous one plus only the newly evicted messages. Persisted per chat in chains: a
// chain starts at the chat's clear point, so `chat clear` starts a new one.
// This header holds the values and the two seams: Summarizer (the LLM call; the worker
// implements it with openai::Client) and SummaryStore (SQLite in production).

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "internal/common/message.h"
#include "internal/common/usage.h"

namespace autonous::engine {

struct Summary {
  int64_t id = 0;
  int64_t covers_through = 0;  // every message of the chain up to this history id is folded in
  int64_t chain_start = 0;     // the clear point the chain started from
  std::string text;
  int64_t tokens = 0;  // of the summary block (summary_block()), by the engine's counter
  std::string model;
};

// One summarizer call's outcome.
struct SummaryCall {
  std::string text;
  std::string model;
  std::optional<common::Usage> usage;  // as the API reported it (some servers omit it)
  std::chrono::milliseconds latency{0};
};

// A summary call that failed (an HTTP error, a timeout, an unusable answer): the compaction
// keeps what it has, the back-off starts. Anything else a summarizer throws is not the
// summary's failure and ends the turn (a storage error while renewing the lease, say).
class SummaryFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A summary call stopped by its caller (shutdown, or the task's lease lost): not a failure of
// the summarizer; the turn ends instead.
class SummaryAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Summarizer {
 public:
  virtual ~Summarizer() = default;
  // Folds `evicted` (oldest first) into `previous` (may be empty). Throws SummaryFailure when
  // the call failed, timed out or answered nothing usable; SummaryAborted when the caller
  // stopped it.
  virtual SummaryCall summarize(const std::string& previous,
                                const std::vector<common::Message>& evicted) = 0;
  // The summarizer's own input budget in the engine's tokens (its window − its reply room).
  virtual int64_t input_budget() const = 0;
  // What the call adds to each message beyond its count_message (its transcript framing).
  virtual int64_t per_message_overhead() const { return 0; }
};

class SummaryStore {
 public:
  virtual ~SummaryStore() = default;
  // The newest summary of the chain that starts at `chain_start`, if any.
  virtual std::optional<Summary> latest(const std::string& chat_id, int64_t chain_start) = 0;
  // How many history rows of `chat_id` have ids in (after_id, before_id): rows that left the
  // verbatim part unread (more than a turn reads since the last compaction).
  virtual int64_t count_between(const std::string& chat_id, int64_t after_id,
                                int64_t before_id) = 0;
  // Stores `summary` (with each call's usage) and returns its id.
  virtual int64_t save(const std::string& chat_id, const Summary& summary,
                       const std::vector<std::optional<common::Usage>>& usage,
                       int64_t messages_covered) = 0;
};

}  // namespace autonous::engine
