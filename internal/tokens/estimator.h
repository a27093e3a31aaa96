#pragma once
// EstimateCounter: a one-pass, script-aware token estimate for models whose tokenizer autonous
// cannot run. It counts code points per class (ASCII letters, digits, punctuation, spaces,
// newlines, CJK ideographs, kana, hangul, other letters by UTF-8 length, marks, other symbols),
// runs of letters/digits/punctuation and lower→upper case changes, and weighs them with
// weights fitted against cl100k_base and o200k_base (bench/estimator_bench --dump,
// scripts/fit_estimator.py) to stay at or above both exact counts with margin.
// Immutable; thread-safe.

#include <array>
#include <string_view>

#include "internal/tokens/token_counter.h"

namespace autonous::tokens {

enum EstimatorFeature : int {
  kFeatAsciiLetter,
  kFeatAsciiDigit,
  kFeatAsciiPunct,
  kFeatSpace,
  kFeatNewline,
  kFeatHan,
  kFeatKana,
  kFeatHangul,
  kFeatLetter2,  // other letters encoded in 2 bytes (Latin extended, Greek, Cyrillic, Hebrew,
                 // Arabic)
  kFeatLetter3,  // other letters of 3+ bytes (Indic, Thai, Georgian, Ethiopic, …)
  kFeatMark,
  kFeatOther,  // non-ASCII symbols, punctuation and digits; emoji and their joiners
  kFeatLetterRun,
  kFeatDigitRun,
  kFeatPunctRun,
  kFeatCaseChange,
  kFeatRareBytes,  // UTF-8 bytes of letters of every other script: its weight is 1, because a
                   // token is at least one byte, so this bounds them from above whatever the
                   // tokenizer (Armenian, Georgian, Ethiopic, Tamil, … in cl100k are near bytes)
  kFeatureCount
};

using EstimatorFeatures = std::array<double, kFeatureCount>;

// The features of `text`. REQUIRES: valid UTF-8.
EstimatorFeatures estimator_features(std::string_view text) noexcept;

class EstimateCounter final : public TokenCounter {
 public:
  int64_t count_text(std::string_view text) const override;
  int64_t per_message() const noexcept override { return kFramingPerMessage; }
  int64_t per_request() const noexcept override { return kFramingPerRequest; }
  std::string_view name() const noexcept override { return "estimate"; }

  // The fitted weights, one per EstimatorFeature.
  static const EstimatorFeatures& weights() noexcept;
};

}  // namespace autonous::tokens
