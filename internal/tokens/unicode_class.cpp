#include "internal/tokens/unicode_class.h"

#include <vector>

#include <unicode/uchar.h>

namespace autonous::tokens {
namespace {

constexpr uint32_t kCodePoints = 0x110000;

std::vector<uint8_t> build_table() {
  std::vector<uint8_t> table(kCodePoints, 0);
  for (uint32_t cp = 0; cp < kCodePoints; ++cp) {
    const auto c = static_cast<UChar32>(cp);
    uint8_t bits = 0;
    switch (u_charType(c)) {
      case U_UPPERCASE_LETTER:
      case U_TITLECASE_LETTER:
        bits = kClassLetter | kClassUpperSet;
        break;
      case U_LOWERCASE_LETTER:
        bits = kClassLetter | kClassLowerSet;
        break;
      case U_MODIFIER_LETTER:
      case U_OTHER_LETTER:
        bits = kClassLetter | kClassUpperSet | kClassLowerSet;
        break;
      case U_NON_SPACING_MARK:
      case U_ENCLOSING_MARK:
      case U_COMBINING_SPACING_MARK:
        bits = kClassUpperSet | kClassLowerSet | kClassMark;
        break;
      case U_DASH_PUNCTUATION:
      case U_START_PUNCTUATION:
      case U_END_PUNCTUATION:
      case U_CONNECTOR_PUNCTUATION:
      case U_OTHER_PUNCTUATION:
      case U_INITIAL_PUNCTUATION:
      case U_FINAL_PUNCTUATION:
      case U_MATH_SYMBOL:
      case U_CURRENCY_SYMBOL:
      case U_MODIFIER_SYMBOL:
      case U_OTHER_SYMBOL:
        bits = kClassPunctSym;
        break;
      case U_DECIMAL_DIGIT_NUMBER:
      case U_LETTER_NUMBER:
      case U_OTHER_NUMBER:
        bits = kClassNumber;
        break;
      default:
        break;
    }
    if (u_isUWhiteSpace(c)) bits |= kClassSpace;
    if (cp == '\r' || cp == '\n') bits |= kClassCrLf;
    table[cp] = bits;
  }
  return table;
}

}  // namespace

uint8_t unicode_class(uint32_t cp) noexcept {
  static const std::vector<uint8_t> kTable = build_table();  // ~1.1 MB, built once
  return cp < kCodePoints ? kTable[cp] : 0;
}

}  // namespace autonous::tokens
