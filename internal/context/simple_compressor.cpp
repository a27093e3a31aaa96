#include "internal/context/simple_compressor.h"

#include <algorithm>

#include "internal/common/utf8.h"
#include "internal/context/token_counter.h"
#include "internal/context/truncate.h"

namespace autonous::context {

Compression SimpleCompressor::compress(std::vector<common::Message> messages,
                                       const TokenBudget& budget) const {
  Compression out;
  const auto total = static_cast<int64_t>(messages.size());
  // Walk newest to oldest; only messages that may be kept are repaired and cut, so the cost
  // follows what fits, not what was read.
  std::vector<bool> cut;
  size_t first_kept = messages.size();
  for (size_t i = messages.size(); i-- > 0;) {
    common::Message& m = messages[i];
    m.content = common::sanitize_utf8(m.content);
    bool was_cut = false;
    if (budget.max_chars > 0 &&
        common::count_code_points(m.content) > static_cast<size_t>(budget.max_chars)) {
      m.content = cut_to_chars(m.content, static_cast<size_t>(budget.max_chars));
      was_cut = true;
    }
    const int64_t cost = counter_.count_message(m);
    if (out.tokens + cost > budget.max_tokens) break;
    out.tokens += cost;
    cut.push_back(was_cut);
    first_kept = i;
  }
  out.messages.assign(
      std::make_move_iterator(messages.begin() + static_cast<ptrdiff_t>(first_kept)),
      std::make_move_iterator(messages.end()));
  out.dropped_count = total - static_cast<int64_t>(out.messages.size());
  out.truncated_count = std::count(cut.begin(), cut.end(), true);
  return out;
}

}  // namespace autonous::context
