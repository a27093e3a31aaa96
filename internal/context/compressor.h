#pragma once
// Compressor: fits a chat's history into a TokenBudget. Pure: no I/O, no clock.
// Strategies that fold history into summaries implement this same interface.

#include <cstdint>
#include <vector>

#include "internal/common/message.h"
#include "internal/context/policy.h"
#include "internal/context/token_budget.h"

namespace autonous::context {

struct Compression {
  std::vector<common::Message> messages;  // what is kept, oldest first, valid UTF-8
  int64_t tokens = 0;                     // their cost by the compressor's counter
  int64_t tokens_before = 0;              // the input's cost (after the per-message char cap)
  int64_t dropped_count = 0;              // input messages left out
  int64_t truncated_count = 0;            // kept messages that were cut, for any reason
  int64_t cut_count = 0;                  // messages cut by a compression level (head + tail)
  Level level = Level::kNone;             // the highest level applied
  int rounds = 0;                         // compression passes (0 when nothing was needed)
  bool hard_truncated = false;            // the rounds did not fit; the last resort ran
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  // Fits `messages` (oldest first) into `budget`. Never throws on content. The result's
  // `tokens` never exceed budget.max_tokens.
  virtual Compression compress(std::vector<common::Message> messages,
                               const TokenBudget& budget) const = 0;
};

}  // namespace autonous::context
