#include "internal/context/simple_compressor.h"

#include <algorithm>

#include "internal/common/utf8.h"
#include "internal/context/truncate.h"
#include "internal/tokens/token_counter.h"

namespace autonous::context {

Prepared prepare(std::vector<common::Message> messages, int64_t max_chars,
                 const tokens::TokenCounter& counter) {
  Prepared p;
  p.messages = std::move(messages);
  const size_t n = p.messages.size();
  p.cost.resize(n);
  p.cut.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::string& text = p.messages[i].content;
    text = common::sanitize_utf8(text);
    if (max_chars > 0 && common::count_code_points(text) > static_cast<size_t>(max_chars)) {
      text = cut_to_chars(text, static_cast<size_t>(max_chars));
      p.cut[i] = 1;
    }
    p.cost[i] = counter.count_message(p.messages[i]);
    p.tokens += p.cost[i];
  }
  return p;
}

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
  return keep_newest(prepare(std::move(messages), budget.max_chars, counter_), budget.max_tokens);
}

}  // namespace autonous::context
