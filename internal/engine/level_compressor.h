#pragma once
// LevelCompressor: the context engine's compression levels over a chat's history.
// Always: invalid UTF-8 is repaired and each message is cut to budget.max_chars code points.
// Then usage u = (fixed + history) / prompt budget picks a level (policy.h thresholds):
//   none        u < soft         nothing more
//   normal      soft <= u < warn cut oversized messages (over 1/16 of the prompt budget) to
//                                that size, head and tail kept, oldest first, until u <= target
//   aggressive  warn <= u < hard normal, then drop the oldest history until u <= target
//   emergency   u >= hard        as aggressive (hard_truncated: messages were dropped at it)
// Levels are monotone: a higher one keeps no more than a lower one. A normal pass that leaves
// the history over budget escalates to aggressive, which always fits (dropping can reach
// nothing), so the result's tokens never exceed budget.max_tokens.

#include "internal/engine/compressor.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// A history message is oversized when it costs more than this share of the prompt budget
// (and at least kMinOversizedTokens): normal compression cuts it to that size.
inline constexpr int64_t kOversizedDivisor = 16;
inline constexpr int64_t kMinOversizedTokens = 32;

int64_t oversized_tokens(int64_t prompt_budget) noexcept;

class LevelCompressor final : public Compressor {
 public:
  // `counter` must outlive the compressor.
  explicit LevelCompressor(const tokens::TokenCounter& counter) : counter_(counter) {}
  Compression compress(std::vector<common::Message> messages,
                       const TokenBudget& budget) const override;
  Compression compress_prepared(Prepared prepared, const TokenBudget& budget) const override;

 private:
  const tokens::TokenCounter& counter_;
};

}  // namespace autonous::engine
