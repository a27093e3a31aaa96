#pragma once
// Unicode classes the split patterns (tiktoken's, Hugging Face's) ask about (\p{L}, \p{Lu}…, \p{M},
// \p{N}, \p{P}, \p{S}, \s), looked up in a table built once from ICU's character database.
// Thread-safe.

#include <cstdint>

namespace autonous::tokens {

enum UnicodeClass : uint8_t {
  kClassLetter = 1 << 0,    // \p{L}
  kClassUpperSet = 1 << 1,  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
  kClassLowerSet = 1 << 2,  // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
  kClassNumber = 1 << 3,    // \p{N}
  kClassSpace = 1 << 4,     // \s (White_Space)
  kClassCrLf = 1 << 5,      // \r or \n
  kClassMark = 1 << 6,      // \p{M} (DeepSeek V3's pattern)
  kClassPunctSym = 1 << 7,  // [\p{P}\p{S}] (DeepSeek V3's pattern)
};

// The classes of code point `cp` (0 for anything above U+10FFFF).
uint8_t unicode_class(uint32_t cp) noexcept;

}  // namespace autonous::tokens
