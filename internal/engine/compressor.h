#pragma once
// Compressor: fits a chat's history into a TokenBudget. Pure: no I/O, no clock. prepare() is
// the step every compressor starts from (the builder prepares once, then plans and compresses).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "internal/common/message.h"
#include "internal/engine/policy.h"
#include "internal/engine/token_budget.h"
#include "internal/engine/tool_units.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// A history made ready for fitting: repaired, its tool units paired (tool_units.h), cut to the
// character cap (or, with none, to `max_message_tokens`, head and tail kept), each message
// counted (a call's JSON included).
struct Prepared {
  std::vector<common::Message> messages;
  std::vector<int64_t> cost;  // count_message of each
  std::vector<char> cut;      // cut to the character or token cap
  int64_t tokens = 0;         // the sum of cost
};

// `tools_offered` false: the request offers no tools, so it carries no tool unit (tool_units.h).
Prepared prepare(std::vector<common::Message> messages, int64_t max_chars,
                 int64_t max_message_tokens, const tokens::TokenCounter& counter,
                 bool tools_offered = true);

struct Compression {
  std::vector<common::Message> messages;  // what is kept, oldest first, valid UTF-8
  int64_t tokens = 0;                     // their cost by the compressor's counter
  int64_t tokens_before = 0;              // the input's cost (after the per-message char cap)
  int64_t dropped_count = 0;              // input messages left out
  int64_t truncated_count = 0;            // kept messages that were cut, for any reason
  int64_t cut_count = 0;                  // messages cut by a compression level (head + tail)
  // Of the kept tool results, the tool_call_ids of those carried cleared (tool_results.h) and of
  // those cut by a level, oldest first.
  std::vector<std::string> cleared_results;
  std::vector<std::string> cut_results;
  Level level = Level::kNone;   // the highest level applied
  int rounds = 0;               // compression passes (0 when nothing was needed)
  bool hard_truncated = false;  // the rounds did not fit; the last resort ran
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  // Fits `messages` (oldest first) into `budget`. Never throws on content. The result's
  // `tokens` never exceed budget.max_tokens.
  virtual Compression compress(std::vector<common::Message> messages,
                               const TokenBudget& budget) const = 0;
  // The same for a history prepare() already made ready.
  virtual Compression compress_prepared(Prepared prepared, const TokenBudget& budget) const = 0;
};

}  // namespace autonous::engine
