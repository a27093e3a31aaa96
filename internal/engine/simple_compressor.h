#pragma once
// SimpleCompressor: the seed's naive compressor, with no levels. Invalid UTF-8 is repaired,
// each message is cut to budget.max_chars code points, and the newest contiguous run that fits
// budget.max_tokens is kept. It is the step every compressor starts from (prepare()), what
// LevelCompressor returns where no level applies, and selectable on its own with
// CONTEXT_COMPRESSOR=simple (the fit guarantee without levels).

#include "internal/engine/compressor.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// The newest contiguous run of `p` that costs at most `limit`. level is kNone when everything
// fits, kEmergency when older messages were dropped (emergency's meaning: the newest run that
// fills the budget), with rounds 1.
Compression keep_newest(Prepared p, int64_t limit);

class SimpleCompressor final : public Compressor {
 public:
  // `counter` must outlive the compressor.
  explicit SimpleCompressor(const tokens::TokenCounter& counter) : counter_(counter) {}
  Compression compress(std::vector<common::Message> messages,
                       const TokenBudget& budget) const override;
  Compression compress_prepared(Prepared prepared, const TokenBudget& budget) const override;

 private:
  const tokens::TokenCounter& counter_;
};

}  // namespace autonous::engine
