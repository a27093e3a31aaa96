#pragma once
// Small text helpers used across layers: ASCII whitespace trimming and ASCII lower-casing.
// Byte-wise, so valid UTF-8 stays valid (no multi-byte sequence holds an ASCII byte).

#include <string>
#include <string_view>

namespace autonous::common {

// `s` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string trim(std::string_view s);

// `s` with ASCII letters lower-cased; other bytes unchanged.
std::string to_lower_ascii(std::string s);

}  // namespace autonous::common
