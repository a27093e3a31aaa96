#include "internal/tokens/estimator.h"

#include <cmath>
#include <cstdint>

#include "internal/common/utf8.h"
#include "internal/tokens/unicode_class.h"

namespace autonous::tokens {
namespace {

enum Kind : uint8_t { kKindSpace, kKindLetter, kKindDigit, kKindPunct, kKindOther };

// ASCII: the feature and the run kind of each byte, computed once.
struct AsciiClass {
  uint8_t feature;
  uint8_t kind;
};
constexpr std::array<AsciiClass, 128> make_ascii() {
  std::array<AsciiClass, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t[c] = {kFeatAsciiLetter, kKindLetter};
    } else if (c >= '0' && c <= '9') {
      t[c] = {kFeatAsciiDigit, kKindDigit};
    } else if (c == '\n' || c == '\r') {
      t[c] = {kFeatNewline, kKindSpace};
    } else if (c == ' ' || c == '\t' || c == '\v' || c == '\f') {
      t[c] = {kFeatSpace, kKindSpace};
    } else {
      t[c] = {kFeatAsciiPunct, kKindPunct};  // punctuation, symbols, control characters
    }
  }
  return t;
}
constexpr std::array<AsciiClass, 128> kAscii = make_ascii();

AsciiClass classify(uint32_t cp) noexcept {
  if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
      (cp >= 0x20000 && cp <= 0x3FFFF) || (cp >= 0xF900 && cp <= 0xFAFF))
    return {kFeatHan, kKindLetter};
  if ((cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x31F0 && cp <= 0x31FF) ||
      (cp >= 0xFF66 && cp <= 0xFF9F))
    return {kFeatKana, kKindLetter};
  if ((cp >= 0xAC00 && cp <= 0xD7AF) || (cp >= 0x1100 && cp <= 0x11FF) ||
      (cp >= 0x3130 && cp <= 0x318F))
    return {kFeatHangul, kKindLetter};
  const uint8_t cls = unicode_class(cp);
  if ((cls & kClassLetter) != 0) {
    // Scripts the fitting corpus covers; everything else is charged per byte (kFeatRareBytes).
    if ((cp >= 0x0080 && cp <= 0x052F) || (cp >= 0x0590 && cp <= 0x06FF) ||
        (cp >= 0x0750 && cp <= 0x077F))
      return {kFeatLetter2, kKindLetter};
    if ((cp >= 0x0900 && cp <= 0x097F) || (cp >= 0x0E00 && cp <= 0x0E7F) ||
        (cp >= 0x1E00 && cp <= 0x1FFF))
      return {kFeatLetter3, kKindLetter};
    return {kFeatRareBytes, kKindLetter};
  }
  if ((cls & kClassUpperSet) != 0) return {kFeatMark, kKindLetter};  // marks continue a word
  if ((cls & kClassSpace) != 0) return {kFeatSpace, kKindSpace};
  return {kFeatOther, kKindOther};
}

}  // namespace

EstimatorFeatures estimator_features(std::string_view text) noexcept {
  // Integer counters: adding to doubles would chain each add on the previous one's latency.
  std::array<uint64_t, kFeatureCount> n{};
  uint8_t prev_kind = kKindSpace;
  bool prev_lower = false;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  auto count = [&](const AsciiClass& c) {
    ++n[c.feature];
    if (c.kind != prev_kind) {
      n[kFeatLetterRun] += c.kind == kKindLetter ? 1 : 0;
      n[kFeatDigitRun] += c.kind == kKindDigit ? 1 : 0;
      n[kFeatPunctRun] += c.kind == kKindPunct ? 1 : 0;
      prev_kind = c.kind;
    }
  };
  while (p < end) {
    if (*p < 0x80) {
      const unsigned char b = *p++;
      const bool upper = b >= 'A' && b <= 'Z';
      n[kFeatCaseChange] += (upper && prev_lower) ? 1 : 0;
      prev_lower = b >= 'a' && b <= 'z';
      count(kAscii[b]);
      continue;
    }
    uint32_t cp = 0;
    const size_t len = common::decode_at(p, end, &cp);
    p += len;
    prev_lower = false;
    const AsciiClass c = classify(cp);
    count(c);
    if (c.feature == kFeatRareBytes) n[kFeatRareBytes] += len - 1;  // count() added one
  }
  EstimatorFeatures f{};
  for (int k = 0; k < kFeatureCount; ++k) f[k] = static_cast<double>(n[k]);
  return f;
}

int64_t EstimateCounter::count_text(std::string_view text) const {
  if (text.empty()) return 0;
  const EstimatorFeatures f = estimator_features(text);
  const EstimatorFeatures& w = weights();
  double sum = 0;
  for (int k = 0; k < kFeatureCount; ++k) sum += w[k] * f[k];
  return static_cast<int64_t>(std::ceil(sum));
}

const EstimatorFeatures& EstimateCounter::weights() noexcept {
  // Fitted by scripts/fit_estimator.py --margin 1.05 on the chunks and files of
  // tests/data/tokens/corpus (estimate >= 1.05 x max(cl100k, o200k) on every sample), in
  // EstimatorFeature order: ASCII letter, digit, punctuation, space, newline, Han, kana,
  // hangul, 2-byte letter, 3-byte letter, mark, other; letter, digit and punctuation runs;
  // case changes; bytes of rare-script letters (fixed at 1: a token is at least one byte).
  static constexpr EstimatorFeatures kWeights = {0.5251, 0.4428, 0.1312, 0.6892, 0.4324, 1.5941,
                                                 0.7187, 1.0750, 1.1794, 0.8479, 2.0389, 2.4453,
                                                 0.0000, 0.2089, 0.4114, 1.5869, 1.0000};
  return kWeights;
}

}  // namespace autonous::tokens
