#pragma once
// SimpleCompressor: repairs invalid UTF-8, cuts each message to budget.max_chars code points
// (marker appended), then keeps the newest contiguous run of messages whose tokens fit
// budget.max_tokens; everything older than the first message that does not fit is dropped.

#include "internal/context/compressor.h"

namespace autonous::context {

class TokenCounter;

class SimpleCompressor final : public Compressor {
 public:
  // `counter` must outlive the compressor.
  explicit SimpleCompressor(const TokenCounter& counter) : counter_(counter) {}
  Compression compress(std::vector<common::Message> messages,
                       const TokenBudget& budget) const override;

 private:
  const TokenCounter& counter_;
};

}  // namespace autonous::context
