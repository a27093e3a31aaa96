#pragma once
// Compressor: fits a chat's history into a TokenBudget. Pure: no I/O, no clock.
// Later strategies (levels, summaries) implement this same interface.

#include <cstdint>
#include <vector>

#include "internal/common/message.h"
#include "internal/context/token_budget.h"

namespace autonous::context {

struct Compression {
  std::vector<common::Message> messages;  // what is kept, oldest first, valid UTF-8
  int64_t tokens = 0;                     // their cost by the compressor's counter
  int64_t dropped_count = 0;              // input messages left out
  int64_t truncated_count = 0;            // kept messages that were cut
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  // Fits `messages` (oldest first) into `budget`. Never throws on content.
  virtual Compression compress(std::vector<common::Message> messages,
                               const TokenBudget& budget) const = 0;
};

}  // namespace autonous::context
