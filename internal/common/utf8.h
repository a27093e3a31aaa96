#pragma once
// UTF-8 helpers over raw bytes: repair, count and cut text on code-point boundaries.
// Invalid input never throws: it is repaired with U+FFFD, one per maximal invalid subsequence
// (the WHATWG decoder's rule), so anything that leaves here is valid UTF-8. Pure functions.

#include <cstddef>
#include <string>
#include <string_view>

namespace autonous::common {

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or values above U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

// `s` with each maximal invalid subsequence replaced by U+FFFD. Valid input comes back unchanged.
std::string sanitize_utf8(std::string_view s);

// Number of code points in `s`. REQUIRES: `s` is valid UTF-8 (each invalid byte counts as one).
size_t count_code_points(std::string_view s) noexcept;

// The byte length of the first `n` code points of `s` (all of `s` if it has fewer).
// REQUIRES: `s` is valid UTF-8.
size_t prefix_bytes(std::string_view s, size_t n) noexcept;

}  // namespace autonous::common
