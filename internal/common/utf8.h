#pragma once
// UTF-8 helpers over raw bytes: repair, count and cut text on code-point boundaries.
// Invalid input never throws: it is repaired with U+FFFD, one per maximal invalid subsequence
// (the WHATWG decoder's rule), so anything that leaves here is valid UTF-8. Pure functions.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace autonous::common {

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or values above U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

// `s` with each maximal invalid subsequence replaced by U+FFFD. Valid input comes back unchanged.
std::string sanitize_utf8(std::string_view s);

// Number of code points in `s`. REQUIRES: `s` is valid UTF-8 (each invalid byte counts as one).
size_t count_code_points(std::string_view s) noexcept;

// Decodes the code point at `p` into `*cp` and returns its length in bytes (1-4), reading no
// byte at or past `end`. Inline because the tokenizer and the estimator call it per character.
// REQUIRES: p < end, and the bytes are valid UTF-8 (sanitize_utf8 first).
inline size_t decode_at(const unsigned char* p, const unsigned char* end, uint32_t* cp) noexcept {
  size_t len = 1;
  uint32_t v = *p;
  if (*p >= 0xF0) {
    len = 4;
    v = *p & 0x07U;
  } else if (*p >= 0xE0) {
    len = 3;
    v = *p & 0x0FU;
  } else if (*p >= 0xC0) {
    len = 2;
    v = *p & 0x1FU;
  }
  for (size_t k = 1; k < len && p + k < end; ++k) v = (v << 6) | (p[k] & 0x3FU);
  *cp = v;
  return len;
}

// The byte length of the first `n` code points of `s` (all of `s` if it has fewer).
// REQUIRES: `s` is valid UTF-8.
size_t prefix_bytes(std::string_view s, size_t n) noexcept;

}  // namespace autonous::common
