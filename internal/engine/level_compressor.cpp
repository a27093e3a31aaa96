#include "internal/engine/level_compressor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "internal/common/utf8.h"
#include "internal/engine/built_context.h"
#include "internal/engine/simple_compressor.h"
#include "internal/engine/tool_results.h"
#include "internal/tokens/token_counter.h"
#include "internal/tokens/truncate.h"

namespace autonous::engine {
namespace {

// What `m`, a tool result, costs cleared.
int64_t stub_cost(common::Message m, const tokens::TokenCounter& counter) {
  clear_result(m);
  return counter.count_message(m);
}

// The level usage calls for, at least budget.min_level; emergency when history cannot fit. With
// stable cuts from normal on, every oversized message is cut first, whatever else happens: the
// history is judged as it will then be carried (#28: judged whole, a history that the cuts fit
// into was taken for an emergency and dropped to the target every turn).
Level start_level(const Prepared& prepared, const TokenBudget& budget,
                  const tokens::TokenCounter& counter) {
  const int64_t prompt = std::max<int64_t>(budget.prompt_tokens(), 1);
  int64_t history_tokens = prepared.tokens;
  if (budget.stable_cuts && budget.min_level >= Level::kNormal) {
    const int64_t cap = oversized_tokens(prompt);
    const std::vector<char> cleared = results_to_clear(prepared.messages, budget.clear_through);
    history_tokens = 0;
    for (size_t i = 0; i < prepared.cost.size(); ++i) {
      if (cleared[i]) {
        history_tokens += std::min(prepared.cost[i], stub_cost(prepared.messages[i], counter));
        continue;
      }
      history_tokens += prepared.messages[i].history_id <= budget.cut_through
                            ? std::min(prepared.cost[i], cap)
                            : prepared.cost[i];
    }
  }
  const double usage =
      static_cast<double>(budget.fixed_tokens + history_tokens) / static_cast<double>(prompt);
  Level level = std::max(classify(usage, budget.thresholds), budget.min_level);
  if (history_tokens > std::max<int64_t>(budget.max_tokens, 0))
    level = std::max(level, Level::kEmergency);
  return level;
}

// One compression of one history: the messages [first_, size) are kept; costs and cut flags
// run alongside.
class Pass {
 public:
  Pass(Prepared prepared, const TokenBudget& budget, const tokens::TokenCounter& counter)
      : messages_(std::move(prepared.messages)),
        budget_(budget),
        counter_(counter),
        n_(messages_.size()),
        limit_(std::max<int64_t>(budget.max_tokens, 0)),
        prompt_(std::max<int64_t>(budget.prompt_tokens(), 1)),
        cap_(oversized_tokens(prompt_)),
        cost_(std::move(prepared.cost)),
        cut_(std::move(prepared.cut)),
        tokens_(prepared.tokens) {
    level_cut_.assign(n_, 0);
    cleared_.assign(n_, 0);
    tokens_before_ = tokens_;
    // History tokens allowed when aiming at the target share of the prompt budget.
    target_ = std::clamp<int64_t>(
        static_cast<int64_t>(std::floor(budget.thresholds.target * static_cast<double>(prompt_))) -
            budget.fixed_tokens,
        0, limit_);
  }

  // Escalating passes from `level` until the history fits. Each level does what the one below
  // does (monotone: more pressure never keeps more): normal cuts oversized messages, aggressive
  // and emergency also drop the oldest down to the target. Dropping can reach nothing, so a pass
  // at aggressive or above always fits; there is no further round.
  void run(Level level, Compression& out) {
    if (level == Level::kNone) return;
    for (int round = 1;; ++round) {
      out.rounds = round;
      out.level = level;
      // Old tool results go first: at normal up to the chat's mark, above it every old one,
      // before anything is judged hopeless (a cleared result costs its stub, not the cap).
      clear_results(level == Level::kNormal ? budget_.clear_through
                                            : std::numeric_limits<int64_t>::max());
      if (level >= Level::kAggressive) drop_hopeless(target_);
      // Stable cuts: at normal only what the last compaction kept, every message above it.
      const int64_t through = budget_.stable_cuts && level == Level::kNormal
                                  ? budget_.cut_through
                                  : std::numeric_limits<int64_t>::max();
      cut_oversized(budget_.stable_cuts ? 0 : target_, cap_, through);
      if (level >= Level::kAggressive) drop_oldest(target_);
      if (tokens_ <= limit_) {
        out.hard_truncated = level == Level::kEmergency && first_ > 0;
        return;
      }
      level = next_level(level);
    }
  }

  Compression result(Compression out) && {
    out.tokens = tokens_;
    out.tokens_before = tokens_before_;
    out.dropped_count = static_cast<int64_t>(first_);
    for (size_t i = first_; i < n_; ++i) {
      out.truncated_count += cut_[i];
      out.cut_count += level_cut_[i];
      if (!is_tool_result(messages_[i])) continue;
      if (cleared_[i])
        out.cleared_results.push_back(messages_[i].tool_call_id);
      else if (level_cut_[i])
        out.cut_results.push_back(messages_[i].tool_call_id);
    }
    out.messages.assign(std::make_move_iterator(messages_.begin() + static_cast<ptrdiff_t>(first_)),
                        std::make_move_iterator(messages_.end()));
    return out;
  }

 private:
  // Clears the old tool results up to `through` (tool_results.h), whatever the goal: which are
  // cleared must not depend on how full the prompt is, or the prefix would change every turn.
  void clear_results(int64_t through) {
    const std::span<const common::Message> kept(messages_.begin() + static_cast<ptrdiff_t>(first_),
                                                messages_.end());
    const std::vector<char> clear = results_to_clear(kept, through);
    for (size_t k = 0; k < clear.size(); ++k) {
      const size_t i = first_ + k;
      if (!clear[k] || cleared_[i]) continue;
      clear_result(messages_[i]);
      const int64_t cost = counter_.count_message(messages_[i]);
      tokens_ += cost - cost_[i];
      cost_[i] = cost;
      cleared_[i] = 1;
      cut_[i] = 1;
      level_cut_[i] = 1;
    }
  }

  // Cut messages over `cap` with a history id up to `through`, oldest first, while the history is
  // above `goal`.
  void cut_oversized(int64_t goal, int64_t cap, int64_t through) {
    for (size_t i = first_; i < n_ && tokens_ > goal; ++i) {
      if (cost_[i] <= cap || messages_[i].history_id > through) continue;
      common::Message& m = messages_[i];
      const int64_t overhead = counter_.message_overhead(m);
      if (overhead >= cap) continue;  // calls alone over the cap: the text cannot save it
      m.content =
          tokens::cut_middle_to_tokens(m.content, cap - overhead, cost_[i] - overhead, counter_);
      const int64_t cost = counter_.count_message(m);
      tokens_ += cost - cost_[i];
      cost_[i] = cost;
      cut_[i] = 1;
      level_cut_[i] = 1;
    }
  }

  void drop_oldest(int64_t goal) {
    while (first_ < n_ && tokens_ > goal) tokens_ -= cost_[first_++];
  }

  // Before cutting, drop what no cut could save: messages older than the newest run whose
  // least likely cost (a cut message keeps about the cap, surely more than half of it) already
  // exceeds `goal`. It saves cutting messages that the drop would remove anyway; the fit never
  // depends on it.
  void drop_hopeless(int64_t goal) {
    int64_t least = 0;
    for (size_t i = n_; i-- > first_;) {
      least += std::min(cost_[i], cap_ / 2);
      if (least > goal) {
        for (; first_ < i + 1; ++first_) tokens_ -= cost_[first_];
        return;
      }
    }
  }

  std::vector<common::Message> messages_;
  const TokenBudget& budget_;
  const tokens::TokenCounter& counter_;
  size_t n_;
  int64_t limit_;   // history may cost this
  int64_t prompt_;  // the whole prompt budget
  int64_t cap_;     // an oversized message is cut to this
  int64_t target_ = 0;
  std::vector<int64_t> cost_;
  std::vector<char> cut_;        // cut for any reason
  std::vector<char> level_cut_;  // cut by a level
  std::vector<char> cleared_;    // a tool result cleared
  size_t first_ = 0;
  int64_t tokens_ = 0;  // cost of the kept messages
  int64_t tokens_before_ = 0;
};

}  // namespace

int64_t oversized_tokens(int64_t prompt_budget) noexcept {
  return std::max(kMinOversizedTokens, prompt_budget / kOversizedDivisor);
}

Compression LevelCompressor::compress(std::vector<common::Message> messages,
                                      const TokenBudget& budget) const {
  return compress_prepared(
      prepare(std::move(messages), budget.max_chars, budget.max_message_tokens, counter_), budget);
}

Compression LevelCompressor::compress_prepared(Prepared prepared, const TokenBudget& budget) const {
  const Level level = start_level(prepared, budget, counter_);
  // No level applies (usage under soft, so everything fits): the simple fit is the answer.
  if (level == Level::kNone) return keep_newest(std::move(prepared), budget.max_tokens);
  Pass pass(std::move(prepared), budget, counter_);
  Compression out;
  pass.run(level, out);
  return std::move(pass).result(std::move(out));
}

}  // namespace autonous::engine
