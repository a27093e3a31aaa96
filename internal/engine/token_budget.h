#pragma once
// TokenBudget: what a compressor may spend. `max_tokens` bounds the history messages it
// returns, as counted by the pipeline's tokens::TokenCounter; `max_chars` bounds each message, in
// code points. `fixed_tokens` is the rest of the prompt (system, user message, framing): usage, the
// share the compression levels look at, is (fixed + history) / (fixed + max_tokens).

#include <cstdint>
#include <limits>

#include "internal/engine/policy.h"

namespace autonous::engine {

struct TokenBudget {
  int64_t max_tokens = 0;
  int64_t max_chars = 0;
  int64_t fixed_tokens = 0;
  Thresholds thresholds;
  // Compress at least at this level (a provider said the context was too long). kNone: by usage.
  Level min_level = Level::kNone;
  int64_t max_message_tokens = 0;  // with no max_chars: each message's cap in tokens (0: none)
  // Normal cuts every oversized message, not only until the target: what is sent of a message
  // then depends on the message alone, so the prompt's prefix stays between compactions.
  bool stable_cuts = false;
  // With stable cuts, the normal level cuts only messages up to this history id (what the chat's
  // last compaction kept); a higher level, the last resort, cuts every oversized message.
  int64_t cut_through = std::numeric_limits<int64_t>::max();
  // The normal level clears old tool results up to this history id (tool_results.h: the chat's
  // cut mark itself, never "every one", so what is cleared changes only at a compaction); a
  // higher level clears every old one. 0: none at normal.
  int64_t clear_through = 0;

  int64_t prompt_tokens() const noexcept { return fixed_tokens + max_tokens; }
};

}  // namespace autonous::engine
