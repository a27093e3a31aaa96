#include "internal/context/level_compressor.h"

#include <algorithm>
#include <cmath>

#include "internal/common/utf8.h"
#include "internal/tokens/token_counter.h"
#include "internal/context/truncate.h"

namespace autonous::context {
namespace {

Level next(Level level) {
  switch (level) {
    case Level::kNone: return Level::kNormal;
    case Level::kNormal: return Level::kAggressive;
    default: return Level::kEmergency;
  }
}

// The working set: messages [first, size) are kept; costs and cut flags run alongside.
struct Working {
  std::vector<common::Message> messages;
  std::vector<int64_t> cost;
  std::vector<char> cut;        // cut for any reason
  std::vector<char> level_cut;  // cut by a level
  size_t first = 0;
  int64_t tokens = 0;  // cost of the kept messages
};

void drop_oldest_until(Working& w, size_t first) {
  for (; w.first < first; ++w.first) w.tokens -= w.cost[w.first];
}

}  // namespace

int64_t oversized_tokens(int64_t prompt_budget) noexcept {
  return std::max(kMinOversizedTokens, prompt_budget / kOversizedDivisor);
}

Compression LevelCompressor::compress(std::vector<common::Message> messages,
                                      const TokenBudget& budget) const {
  Working w;
  w.messages = std::move(messages);
  const size_t n = w.messages.size();
  w.cost.resize(n);
  w.cut.assign(n, 0);
  w.level_cut.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    common::Message& m = w.messages[i];
    m.content = common::sanitize_utf8(m.content);
    if (budget.max_chars > 0 &&
        common::count_code_points(m.content) > static_cast<size_t>(budget.max_chars)) {
      m.content = cut_to_chars(m.content, static_cast<size_t>(budget.max_chars));
      w.cut[i] = 1;
    }
    w.cost[i] = counter_.count_message(m);
    w.tokens += w.cost[i];
  }

  Compression out;
  out.tokens_before = w.tokens;
  const int64_t fixed = budget.fixed_tokens;
  const int64_t limit = std::max<int64_t>(budget.max_tokens, 0);  // history may cost this
  const int64_t prompt = std::max<int64_t>(budget.prompt_tokens(), 1);
  const auto usage = [&] {
    return static_cast<double>(fixed + w.tokens) / static_cast<double>(prompt);
  };
  // History tokens allowed when aiming at the target share of the prompt budget.
  const int64_t target = std::clamp<int64_t>(
      static_cast<int64_t>(std::floor(budget.thresholds.target * static_cast<double>(prompt))) -
          fixed,
      0, limit);
  const int64_t cap = oversized_tokens(prompt);

  // Cut oversized messages, oldest first, while the history is above `goal`.
  const auto cut_oversized = [&](int64_t goal) {
    const int64_t content_cap = cap - counter_.per_message();
    for (size_t i = w.first; i < n && w.tokens > goal; ++i) {
      if (w.cost[i] <= cap || w.level_cut[i]) continue;
      common::Message& m = w.messages[i];
      m.content = cut_middle_to_tokens(m.content, content_cap,
                                       w.cost[i] - counter_.per_message(), counter_);
      const int64_t cost = counter_.count_message(m);
      w.tokens += cost - w.cost[i];
      w.cost[i] = cost;
      w.cut[i] = 1;
      w.level_cut[i] = 1;
    }
  };
  const auto drop_oldest = [&](int64_t goal) {
    while (w.first < n && w.tokens > goal) w.tokens -= w.cost[w.first++];
  };
  // Before cutting, drop what no cut could save: messages older than the newest run whose
  // least likely cost (a cut message keeps about the cap, surely more than half of it) already
  // exceeds `goal`. It saves cutting messages that the drop would remove anyway; the fit never
  // depends on it.
  const auto drop_hopeless = [&](int64_t goal) {
    int64_t least = 0;
    for (size_t i = n; i-- > w.first;) {
      least += std::min(w.cost[i], cap / 2);
      if (least > goal) {
        drop_oldest_until(w, i + 1);
        return;
      }
    }
  };

  Level level = std::max(classify(usage(), budget.thresholds), budget.min_level);
  if (w.tokens > limit) level = std::max(level, Level::kEmergency);
  if (level != Level::kNone) {
    for (int round = 1; round <= kMaxRounds; ++round) {
      out.rounds = round;
      out.level = level;
      if (level == Level::kAggressive) drop_hopeless(target);
      if (level == Level::kEmergency) drop_hopeless(limit);
      cut_oversized(target);
      if (level == Level::kAggressive) drop_oldest(target);
      if (level == Level::kEmergency) drop_oldest(limit);
      if (w.tokens <= limit) break;
      level = next(level);
    }
    if (w.tokens > limit) {
      // Unreachable while counts add up; kept so the guarantee does not rest on that.
      drop_oldest(limit);
      out.hard_truncated = true;
    }
  }

  out.tokens = w.tokens;
  out.dropped_count = static_cast<int64_t>(w.first);
  for (size_t i = w.first; i < n; ++i) {
    out.truncated_count += w.cut[i];
    out.cut_count += w.level_cut[i];
  }
  out.messages.assign(std::make_move_iterator(w.messages.begin() + static_cast<ptrdiff_t>(w.first)),
                      std::make_move_iterator(w.messages.end()));
  return out;
}

}  // namespace autonous::context
