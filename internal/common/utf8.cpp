#include "internal/common/utf8.h"

namespace autonous::common {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid sequence starting at s[i], or 0 when none starts there. When 0,
// `*consumed` is the length of the maximal invalid subsequence to replace (>= 1): the bytes
// that still formed a valid prefix of some sequence, per the Unicode/WHATWG rule.
size_t valid_sequence_at(std::string_view s, size_t i, size_t* consumed) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  size_t need = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    *consumed = 1;
    return 0;
  }
  size_t j = 1;
  for (; j <= need; ++j) {
    if (i + j >= s.size()) break;
    const auto b = static_cast<unsigned char>(s[i + j]);
    if (b < lo || b > hi) break;
    lo = 0x80;
    hi = 0xBF;
  }
  if (j == need + 1) return need + 1;
  *consumed = j;
  return 0;
}

}  // namespace

bool is_valid_utf8(std::string_view s) noexcept {
  size_t i = 0;
  while (i < s.size()) {
    size_t consumed = 0;
    const size_t n = valid_sequence_at(s, i, &consumed);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string sanitize_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    size_t consumed = 0;
    const size_t n = valid_sequence_at(s, i, &consumed);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append(kReplacement);
      i += consumed;
    }
  }
  return out;
}

size_t count_code_points(std::string_view s) noexcept {
  size_t n = 0;
  for (const char c : s) {
    // Count every byte that is not a continuation byte.
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

size_t prefix_bytes(std::string_view s, size_t n) noexcept {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == n) return i;
      ++seen;
    }
  }
  return s.size();
}

}  // namespace autonous::common
