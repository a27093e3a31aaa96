#pragma once
// Cutting text on code-point boundaries with a visible marker that says how much was cut.
// Pure functions over valid UTF-8.

#include <cstdint>
#include <string>
#include <string_view>

namespace autonous::tokens {

class TokenCounter;

// The marker appended to cut text: "\n[… N characters cut]".
std::string cut_marker(size_t cut_code_points);

// The marker put in the middle of text whose head and tail are kept: "\n[… N characters cut …]\n".
std::string middle_marker(size_t cut_code_points);

// The first `keep` code points of `text` plus a marker, or `text` itself when it is no longer.
// REQUIRES: `text` is valid UTF-8.
std::string cut_to_chars(std::string_view text, size_t keep);

// A head of `text` (with a marker when cut) whose count_text is at most `max_tokens`: the
// longest such head to within 1/32 of its length. Returns "" when not even the marker fits.
// The second form is given count_text(text), when the caller knows it.
// REQUIRES: `text` is valid UTF-8.
std::string cut_to_tokens(std::string_view text, int64_t max_tokens, const TokenCounter& counter);
std::string cut_to_tokens(std::string_view text, int64_t max_tokens, int64_t text_tokens,
                          const TokenCounter& counter);

// `text` with its middle replaced by middle_marker(): head + tail (the head gets the odd code
// point) whose count_text is at most `max_tokens`, as long as cut_to_tokens' head. Returns ""
// when not even the marker fits. `text_tokens` is count_text(text).
// REQUIRES: `text` is valid UTF-8.
std::string cut_middle_to_tokens(std::string_view text, int64_t max_tokens, int64_t text_tokens,
                                 const TokenCounter& counter);

// The longest tail of `text` (no marker) whose count_text is at most `max_tokens`: what is left
// of a message when not even a cut marker fits (the question at its end). "" when nothing fits.
// REQUIRES: `text` is valid UTF-8.
std::string tail_to_tokens(std::string_view text, int64_t max_tokens, const TokenCounter& counter);

}  // namespace autonous::tokens
