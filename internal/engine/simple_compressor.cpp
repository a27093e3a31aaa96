#include "internal/engine/simple_compressor.h"

#include <algorithm>

#include "internal/common/utf8.h"
#include "internal/tokens/token_counter.h"
#include "internal/tokens/truncate.h"

namespace autonous::engine {

Compression keep_newest(Prepared p, int64_t limit) {
  Compression out;
  out.tokens_before = p.tokens;
  const size_t n = p.messages.size();
  limit = std::max<int64_t>(limit, 0);
  size_t first = n;
  while (first > 0 && out.tokens + p.cost[first - 1] <= limit) out.tokens += p.cost[--first];
  out.dropped_count = static_cast<int64_t>(first);
  for (size_t i = first; i < n; ++i) out.truncated_count += p.cut[i];
  if (first > 0) {
    out.level = Level::kEmergency;
    out.rounds = 1;
  }
  out.messages.assign(std::make_move_iterator(p.messages.begin() + static_cast<ptrdiff_t>(first)),
                      std::make_move_iterator(p.messages.end()));
  return out;
}

Compression SimpleCompressor::compress(std::vector<common::Message> messages,
                                       const TokenBudget& budget) const {
  return compress_prepared(
      prepare(std::move(messages), budget.max_chars, budget.max_message_tokens, counter_), budget);
}

Compression SimpleCompressor::compress_prepared(Prepared prepared,
                                                const TokenBudget& budget) const {
  return keep_newest(std::move(prepared), budget.max_tokens);
}

}  // namespace autonous::engine
