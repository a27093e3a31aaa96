#pragma once
// TokenBudget: what a compressor may spend. `max_tokens` bounds the messages it returns, as
// counted by the pipeline's TokenCounter; `max_chars` bounds each message, in code points.

#include <cstdint>

namespace autonous::context {

struct TokenBudget {
  int64_t max_tokens = 0;
  int64_t max_chars = 0;
};

}  // namespace autonous::context
