#include "internal/engine/compressor.h"

#include "internal/common/utf8.h"
#include "internal/tokens/token_counter.h"
#include "internal/tokens/truncate.h"

namespace autonous::engine {

Prepared prepare(std::vector<common::Message> messages, int64_t max_chars,
                 int64_t max_message_tokens, const tokens::TokenCounter& counter,
                 bool tools_offered) {
  Prepared p;
  pair_tool_units(messages, tools_offered);
  p.messages = std::move(messages);
  const size_t n = p.messages.size();
  p.cost.resize(n);
  p.cut.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    common::Message& m = p.messages[i];
    m.content = common::sanitize_utf8(m.content);
    if (max_chars > 0 && common::count_code_points(m.content) > static_cast<size_t>(max_chars)) {
      m.content = tokens::cut_to_chars(m.content, static_cast<size_t>(max_chars));
      p.cut[i] = 1;
    }
    p.cost[i] = counter.count_message(m);
    const int64_t overhead = counter.message_overhead(m);
    if (max_chars <= 0 && max_message_tokens > overhead && p.cost[i] > max_message_tokens) {
      m.content = tokens::cut_middle_to_tokens(m.content, max_message_tokens - overhead,
                                               p.cost[i] - overhead, counter);
      p.cost[i] = counter.count_message(m);
      p.cut[i] = 1;
    }
    p.tokens += p.cost[i];
  }
  return p;
}

}  // namespace autonous::engine
