#pragma once
// SimpleCompressor: the seed's naive compressor, with no levels. Invalid UTF-8 is repaired,
// each message is cut to budget.max_chars code points, and the newest contiguous run that fits
// budget.max_tokens is kept. The builder uses it where no level applies (summarize: the
// compaction already aimed at the target, so only the fit is left to guarantee); it is also
// selectable for every strategy with CONTEXT_COMPRESSOR=simple.

#include "internal/context/compressor.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::context {

class SimpleCompressor final : public Compressor {
 public:
  // `counter` must outlive the compressor.
  explicit SimpleCompressor(const tokens::TokenCounter& counter) : counter_(counter) {}
  // level is kNone when everything fits, kEmergency when older messages were dropped (the
  // newest run that fills the budget: emergency's meaning); rounds 1 then.
  Compression compress(std::vector<common::Message> messages,
                       const TokenBudget& budget) const override;

 private:
  const tokens::TokenCounter& counter_;
};

}  // namespace autonous::context
