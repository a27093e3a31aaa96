#include "internal/context/simple_compressor.h"

#include <algorithm>

#include "internal/common/utf8.h"
#include "internal/context/truncate.h"
#include "internal/tokens/token_counter.h"

namespace autonous::context {

Compression SimpleCompressor::compress(std::vector<common::Message> messages,
                                       const TokenBudget& budget) const {
  Compression out;
  const size_t n = messages.size();
  std::vector<int64_t> cost(n);
  std::vector<char> cut(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::string& text = messages[i].content;
    text = common::sanitize_utf8(text);
    if (budget.max_chars > 0 &&
        common::count_code_points(text) > static_cast<size_t>(budget.max_chars)) {
      text = cut_to_chars(text, static_cast<size_t>(budget.max_chars));
      cut[i] = 1;
    }
    cost[i] = counter_.count_message(messages[i]);
    out.tokens_before += cost[i];
  }
  // The newest contiguous run that fits.
  const int64_t limit = std::max<int64_t>(budget.max_tokens, 0);
  size_t first = n;
  while (first > 0 && out.tokens + cost[first - 1] <= limit) out.tokens += cost[--first];
  out.dropped_count = static_cast<int64_t>(first);
  for (size_t i = first; i < n; ++i) out.truncated_count += cut[i];
  if (first > 0) {
    out.level = Level::kEmergency;
    out.rounds = 1;
  }
  out.messages.assign(std::make_move_iterator(messages.begin() + static_cast<ptrdiff_t>(first)),
                      std::make_move_iterator(messages.end()));
  return out;
}

}  // namespace autonous::context
