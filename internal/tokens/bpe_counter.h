#pragma once
// BpeCounter: exact token counts for OpenAI's cl100k_base and o200k_base, identical to
// tiktoken's encode_ordinary (special-token text counts as ordinary text), plus OpenAI's chat
// framing of 4 tokens per message (3 and the role) and 3 per request. Immutable; thread-safe.

#include <memory>
#include <string>

#include "internal/tokens/bpe_ranks.h"
#include "internal/tokens/pretokenizer.h"
#include "internal/tokens/token_counter.h"

namespace autonous::tokens {

class BpeCounter final : public TokenCounter {
 public:
  BpeCounter(std::string name, BpeRanks ranks, SplitPattern pattern)
      : name_(std::move(name)), ranks_(std::move(ranks)), pattern_(pattern) {}

  // REQUIRES: valid UTF-8 (sanitize_utf8 first: invalid bytes count as U+FFFD, as WHATWG
  // decoding does).
  int64_t count_text(std::string_view text) const override;
  int64_t per_message() const noexcept override { return kFramingPerMessage; }
  int64_t per_request() const noexcept override { return kFramingPerRequest; }
  std::string_view name() const noexcept override { return name_; }
  const BpeRanks& ranks() const noexcept { return ranks_; }

 private:
  std::string name_;
  BpeRanks ranks_;
  SplitPattern pattern_;
};

// The default place for rank files, used when TOKENIZER_DATA_DIR is not set.
inline constexpr const char* kDefaultTokenizerDataDir = "/usr/local/share/autonous/tokenizer";

// Loads "cl100k_base" or "o200k_base" from `<data_dir>/<encoding>.tiktoken`, its built tables
// through `cache_dir` when not "" (BpeRanks::load_cached; `use` says what happened). Throws
// std::invalid_argument for an unknown encoding, std::runtime_error when the file is missing
// or malformed (the message says where it looked).
std::unique_ptr<BpeCounter> load_bpe_counter(const std::string& encoding,
                                             const std::string& data_dir,
                                             const std::string& cache_dir = "",
                                             BpeRanks::CacheUse* use = nullptr);

}  // namespace autonous::tokens
